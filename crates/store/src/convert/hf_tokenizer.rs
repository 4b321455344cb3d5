//! A Hugging Face `tokenizer.json` and `tokenizer_config.json` read into the engine's
//! `tokenizer.*` metadata, as llama.cpp's converter writes it: the vocabulary by id (padded to
//! the embedding's rows), token types, special token ids and the chat template, and then
//! either
//! - byte-level BPE (Llama 3, Qwen 2/3, SmolLM, Phi-4): the merges and the pre-tokenizer's name, or
//! - SentencePiece-style BPE (Llama 2, Mistral, Gemma 3: spaces written as '▁', `<0xNN>` byte
//!   fallback): scores, from which the engine ranks its merges, and the space-prefix flag.

use std::collections::HashMap;

use doppler_engine::gguf::{MetadataArray, MetadataValue, StringArray};
use doppler_engine::tokenizer::TokenType;
use serde_json::Value;

use super::ConvertError;

/// SentencePiece's word boundary: a space.
const WORD_BOUNDARY: &str = "▁";

/// How a tokenizer.json's BPE model sees text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BpeKind {
    ByteLevel,
    SentencePiece { add_space_prefix: bool },
}

fn bad(reason: impl Into<String>) -> ConvertError {
    ConvertError::Tokenizer { reason: reason.into() }
}

/// The tokenizer as metadata entries, with `vocab_rows` tokens (the embedding's rows: ids
/// the tokenizer leaves unnamed become unused `[PAD<id>]` tokens).
pub(crate) fn tokenizer_metadata(
    tokenizer: &Value,
    tokenizer_config: &Value,
    vocab_rows: usize,
) -> Result<Vec<(String, MetadataValue)>, ConvertError> {
    let kind = bpe_kind(tokenizer)?;
    let model = &tokenizer["model"];
    let vocab = model["vocab"].as_object().ok_or_else(|| bad("model.vocab is missing"))?;
    let byte_fallback = model["byte_fallback"].as_bool().unwrap_or(false);
    let unk_token = model["unk_token"].as_str();
    let mut by_id: Vec<Option<(String, TokenType)>> = vec![None; vocab_rows];
    let mut place = |id: u64, text: &str, kind: TokenType| -> Result<(), ConvertError> {
        let slot = by_id.get_mut(id as usize).ok_or_else(|| {
            bad(format!("token {text:?} has id {id}, past the embedding's {vocab_rows} rows"))
        })?;
        *slot = Some((text.to_string(), kind));
        Ok(())
    };
    for (text, id) in vocab {
        let id = id.as_u64().ok_or_else(|| bad(format!("token {text:?} has no integer id")))?;
        let token_type = match kind {
            BpeKind::SentencePiece { .. } if Some(text.as_str()) == unk_token => TokenType::Unknown,
            BpeKind::SentencePiece { .. } if byte_fallback && is_byte_token(text) => TokenType::Byte,
            _ => TokenType::Normal,
        };
        place(id, text, token_type)?;
    }
    for added in tokenizer["added_tokens"].as_array().into_iter().flatten() {
        let (Some(id), Some(text)) = (added["id"].as_u64(), added["content"].as_str()) else {
            return Err(bad(format!("an added token without id or content: {added}")));
        };
        if added["special"].as_bool().unwrap_or(false) {
            let token_type = if Some(text) == unk_token { TokenType::Unknown } else { TokenType::Control };
            place(id, text, token_type)?;
        } else if let BpeKind::SentencePiece { .. } = kind {
            // Matched whole in raw text: stored with spaces, as llama.cpp stores user-defined
            // SentencePiece pieces (Gemma's whitespace runs).
            place(id, &text.replace(WORD_BOUNDARY, " "), TokenType::UserDefined)?;
        } else {
            place(id, text, TokenType::UserDefined)?;
        }
    }
    let mut tokens = StringArray::new();
    let mut types = Vec::with_capacity(vocab_rows);
    let mut ids = HashMap::new();
    for (id, slot) in by_id.into_iter().enumerate() {
        let (text, token_type) = slot.unwrap_or_else(|| (format!("[PAD{id}]"), TokenType::Unused));
        tokens.push(&text);
        types.push(token_type.to_gguf());
        ids.insert(text, id as u32);
    }
    let merges = merges(&model["merges"]).ok_or_else(|| bad("model.merges is missing or malformed"))?;
    let mut entries = match kind {
        BpeKind::ByteLevel => {
            let merges: StringArray = merges.iter().map(|(left, right)| format!("{left} {right}")).collect();
            vec![
                ("tokenizer.ggml.model".to_string(), MetadataValue::String("gpt2".into())),
                (
                    "tokenizer.ggml.pre".to_string(),
                    MetadataValue::String(pre_tokenizer_name(tokenizer)?.into()),
                ),
                ("tokenizer.ggml.tokens".to_string(), MetadataValue::Array(MetadataArray::String(tokens))),
                ("tokenizer.ggml.token_type".to_string(), MetadataValue::Array(MetadataArray::I32(types))),
                ("tokenizer.ggml.merges".to_string(), MetadataValue::Array(MetadataArray::String(merges))),
            ]
        }
        BpeKind::SentencePiece { add_space_prefix } => {
            let scores = merge_rank_scores(&ids, tokens.len(), &merges);
            let mut entries = vec![
                ("tokenizer.ggml.model".to_string(), MetadataValue::String("llama".into())),
                ("tokenizer.ggml.pre".to_string(), MetadataValue::String("default".into())),
                ("tokenizer.ggml.tokens".to_string(), MetadataValue::Array(MetadataArray::String(tokens))),
                ("tokenizer.ggml.scores".to_string(), MetadataValue::Array(MetadataArray::F32(scores))),
                ("tokenizer.ggml.token_type".to_string(), MetadataValue::Array(MetadataArray::I32(types))),
                ("tokenizer.ggml.add_space_prefix".to_string(), MetadataValue::Bool(add_space_prefix)),
            ];
            if let Some(&unk) = unk_token.and_then(|text| ids.get(text)) {
                entries.push(("tokenizer.ggml.unknown_token_id".to_string(), MetadataValue::U32(unk)));
            }
            entries
        }
    };
    for (role, key) in
        [("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"), ("pad_token", "padding_token_id")]
    {
        let text = match &tokenizer_config[role] {
            Value::String(text) => Some(text.as_str()),
            Value::Object(token) => token.get("content").and_then(Value::as_str),
            _ => None,
        };
        if let Some(&id) = text.and_then(|text| ids.get(text)) {
            entries.push((format!("tokenizer.ggml.{key}"), MetadataValue::U32(id)));
        }
    }
    for flag in ["add_bos_token", "add_eos_token"] {
        if let Some(value) = tokenizer_config[flag].as_bool() {
            entries.push((format!("tokenizer.ggml.{flag}"), MetadataValue::Bool(value)));
        }
    }
    if let Some(template) = chat_template(&tokenizer_config["chat_template"]) {
        entries.push(("tokenizer.chat_template".to_string(), MetadataValue::String(template)));
    }
    Ok(entries)
}

/// Which of the two BPE flavours the engine reads `tokenizer` is, or why it is neither.
fn bpe_kind(tokenizer: &Value) -> Result<BpeKind, ConvertError> {
    match tokenizer["model"]["type"].as_str() {
        Some("BPE") => {}
        Some(other) => {
            return Err(bad(format!(
                "{other} tokenizers do not convert yet; byte-level BPE (Llama 3, Qwen) and \
                 SentencePiece-style BPE (Llama 2, Mistral, Gemma) do"
            )))
        }
        None => return Err(bad("tokenizer.json has no model.type")),
    }
    let mentions = |part: &str, needle: &str| tokenizer[part].to_string().contains(needle);
    if mentions("pre_tokenizer", "\"ByteLevel\"") || mentions("decoder", "\"ByteLevel\"") {
        return Ok(BpeKind::ByteLevel);
    }
    let sentencepiece = tokenizer["model"]["byte_fallback"].as_bool() == Some(true)
        || ["normalizer", "pre_tokenizer", "decoder"].iter().any(|part| mentions(part, WORD_BOUNDARY));
    if !sentencepiece {
        return Err(bad(
            "a BPE tokenizer that is neither byte-level nor SentencePiece-style ('▁' for spaces) does not convert",
        ));
    }
    let mut add_space_prefix = false;
    let mut spaces_replaced = false;
    for step in steps(&tokenizer["normalizer"], "normalizers") {
        match step["type"].as_str() {
            Some("Prepend") if step["prepend"] == WORD_BOUNDARY => add_space_prefix = true,
            Some("Replace") if step["pattern"]["String"] == " " && step["content"] == WORD_BOUNDARY => {
                spaces_replaced = true
            }
            _ => return Err(bad(format!("a SentencePiece normalizer step the engine lacks: {step}"))),
        }
    }
    for step in steps(&tokenizer["pre_tokenizer"], "pretokenizers") {
        match step["type"].as_str() {
            Some("Metaspace") if step["replacement"] == WORD_BOUNDARY => {
                // Words split at spaces keep merges from crossing them; the engine (as llama.cpp)
                // merges across.
                if step["split"].as_bool().unwrap_or(true) {
                    return Err(bad(
                        "a Metaspace pre-tokenizer that splits words at spaces does not convert",
                    ));
                }
                spaces_replaced = true;
                // "first" prefixes only text at the input's start; the engine, as llama.cpp,
                // also prefixes text after a special token, so the two differ there.
                add_space_prefix = match step["prepend_scheme"].as_str() {
                    Some(scheme) => scheme != "never",
                    None => step["add_prefix_space"].as_bool().unwrap_or(true),
                };
            }
            // Gemma's: splits at spaces the normalizer has already turned into '▁', so never.
            Some("Split") if spaces_replaced && step["pattern"]["String"] == " " => {}
            _ => return Err(bad(format!("a SentencePiece pre-tokenizer step the engine lacks: {step}"))),
        }
    }
    if !spaces_replaced {
        return Err(bad("a SentencePiece-style tokenizer that leaves spaces as they are does not convert"));
    }
    Ok(BpeKind::SentencePiece { add_space_prefix })
}

/// The steps of a normalizer or pre-tokenizer: none, one, or a `Sequence` of them.
fn steps<'a>(part: &'a Value, sequence_key: &str) -> Vec<&'a Value> {
    match part {
        Value::Null => Vec::new(),
        sequence if sequence["type"] == "Sequence" => {
            sequence[sequence_key].as_array().map(|steps| steps.iter().collect()).unwrap_or_default()
        }
        step => vec![step],
    }
}

/// `<0x00>` … `<0xFF>`.
fn is_byte_token(text: &str) -> bool {
    text.len() == 6
        && text.starts_with("<0x")
        && text.ends_with('>')
        && text[3..5].chars().all(|c| c.is_ascii_hexdigit())
}

/// SentencePiece scores that make the engine merge in tokenizer.json's merge order: the engine
/// joins the adjacent pair whose joined token scores highest, so a token scores minus the rank
/// of the first merge that makes it. A token that no merge makes (a single character, a byte,
/// a special token) scores below every merge. (llama.cpp's converter, reading tokenizer.json
/// without tokenizer.model, writes minus the id, which differs from the merge order on runs
/// of spaces.)
fn merge_rank_scores(ids: &HashMap<String, u32>, vocab_len: usize, merges: &[(String, String)]) -> Vec<f32> {
    let unmade = -(merges.len() as f32);
    let mut scores = vec![unmade; vocab_len];
    for (rank, (left, right)) in merges.iter().enumerate().rev() {
        if let Some(&id) = ids.get(&format!("{left}{right}")) {
            scores[id as usize] = -(rank as f32);
        }
    }
    scores
}

/// `(left, right)` pairs, from either of tokenizer.json's merge forms (`"left right"` or
/// `["left", "right"]`).
fn merges(merges: &Value) -> Option<Vec<(String, String)>> {
    merges
        .as_array()?
        .iter()
        .map(|merge| match merge {
            Value::String(text) => {
                text.split_once(' ').map(|(left, right)| (left.to_string(), right.to_string()))
            }
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(left), Value::String(right)] => Some((left.clone(), right.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The engine's pre-tokenizer name for the regexes tokenizer.json splits words with, found
/// by their telling parts (as llama.cpp names them): o200k (Phi-4, GPT-4o) tells upper- from
/// lower-case letters, Llama 3 groups digits by three, Qwen 2 splits single digits inside its
/// word regex, SmolLM splits digits first, GPT-2 neither.
fn pre_tokenizer_name(tokenizer: &Value) -> Result<&'static str, ConvertError> {
    let pre = tokenizer["pre_tokenizer"].to_string();
    let name = if pre.contains(r"[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]") && pre.contains(r"[\\r\\n/]") {
        "gpt-4o"
    } else if pre.contains(r"\\p{N}{1,3}") {
        "llama-bpe"
    } else if pre.contains(r"\\p{L}+|\\p{N}|") {
        "qwen2"
    } else if pre.contains("\"Digits\"") {
        "smollm"
    } else if pre.contains("\"ByteLevel\"") && !pre.contains("\"Split\"") {
        "gpt2"
    } else {
        return Err(bad(format!("an unknown pre-tokenizer: {pre:.300}")));
    };
    Ok(name)
}

/// The default template: tokenizer_config.json holds one string, or named templates.
fn chat_template(value: &Value) -> Option<String> {
    match value {
        Value::String(template) => Some(template.clone()),
        Value::Array(named) => named
            .iter()
            .find(|entry| entry["name"] == "default")
            .and_then(|entry| entry["template"].as_str())
            .map(str::to_string),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use doppler_engine::{
        gguf::{GgufFile, GgufWriter},
        tokenizer::Tokenizer,
    };

    use super::*;

    /// The trimmed real tokenizers the transformers fixtures were made from.
    fn committed(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/hf_fixtures/tokenizers").join(name)
    }

    fn read(path: &Path) -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// The engine's tokenizer as it reads the converted metadata back from a GGUF.
    fn converted(dir: &Path) -> Tokenizer {
        let tokenizer = read(&dir.join("tokenizer.json"));
        let rows = tokenizer["model"]["vocab"]
            .as_object()
            .unwrap()
            .values()
            .chain(tokenizer["added_tokens"].as_array().unwrap().iter().map(|added| &added["id"]))
            .map(|id| id.as_u64().unwrap() as usize + 1)
            .max()
            .unwrap();
        let entries =
            tokenizer_metadata(&tokenizer, &read(&dir.join("tokenizer_config.json")), rows).unwrap();
        let mut writer = GgufWriter::new();
        for (key, value) in entries {
            writer.add_metadata(key, value).unwrap();
        }
        Tokenizer::from_gguf(&GgufFile::from_bytes(writer.to_bytes().unwrap()).unwrap()).unwrap()
    }

    const TEXTS: [&str; 15] = [
        "The quick brown fox jumps over the lazy dog.",
        "  leading spaces and\ttabs\nnew lines",
        "runs of spaces:  two,   three,    four,        eight.",
        "\n\nblank lines\n\n\n\nand trailing spaces   ",
        " a leading space",
        "emoji 🚀🔥 and a family 👨‍👩‍👧 fall back to bytes",
        "日本語のテキスト 中文测试 한국어",
        "Привет мир, مرحبا بالعالم, नमस्ते दुनिया",
        "стена на реке, ранние новости; यह किताब है, में और प्रकार",
        "fn main() {\n    println!(\"hello {}\", 1 + 2);\n}\n",
        "def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)",
        "1 + 1 = 2, 12345 * 678 = 8369910",
        "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n",
        "[INST] What is the capital of France? [/INST]",
        "",
    ];

    #[test]
    fn converted_tokenizers_give_the_ids_of_the_tokenizers_library() {
        // SentencePiece-style (Mistral's Llama 2 vocabulary, Gemma 3) and byte-level.
        for name in ["mistral", "gemma3", "phi3", "llama3", "qwen2", "qwen3"] {
            let dir = committed(name);
            let ours = converted(&dir);
            let theirs = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
            for text in TEXTS {
                let expected = theirs.encode(text, true).unwrap().get_ids().to_vec();
                assert_eq!(ours.encode(text, ours.add_bos()).unwrap(), expected, "{name}: {text:?}");
            }
        }
    }

    #[test]
    fn sentencepiece_metadata_types_bytes_unknown_and_special_tokens() {
        let dir = committed("mistral");
        let tokenizer = read(&dir.join("tokenizer.json"));
        let entries =
            tokenizer_metadata(&tokenizer, &read(&dir.join("tokenizer_config.json")), 4221).unwrap();
        let value = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(value("tokenizer.ggml.model"), Some(MetadataValue::String("llama".into())));
        assert_eq!(value("tokenizer.ggml.add_space_prefix"), Some(MetadataValue::Bool(true)));
        assert_eq!(value("tokenizer.ggml.unknown_token_id"), Some(MetadataValue::U32(0)));
        assert_eq!(value("tokenizer.ggml.bos_token_id"), Some(MetadataValue::U32(1)));
        let Some(MetadataValue::Array(MetadataArray::I32(types))) = value("tokenizer.ggml.token_type") else {
            panic!("no token types")
        };
        assert_eq!(
            types[..4],
            [TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Byte]
                .map(TokenType::to_gguf)
        );
        assert_eq!(types[3..259].iter().filter(|&&t| t == TokenType::Byte.to_gguf()).count(), 256);
        let Some(MetadataValue::Array(MetadataArray::F32(scores))) = value("tokenizer.ggml.scores") else {
            panic!("no scores")
        };
        // "▁t" is made by the first merge; single characters by none.
        let tokens = tokenizer["model"]["vocab"].as_object().unwrap();
        assert_eq!(scores[tokens["▁t"].as_u64().unwrap() as usize], 0.0);
        assert_eq!(scores[tokens["t"].as_u64().unwrap() as usize], -6216.0, "below all 6,216 merges");

        let gemma = committed("gemma3");
        let entries = tokenizer_metadata(
            &read(&gemma.join("tokenizer.json")),
            &read(&gemma.join("tokenizer_config.json")),
            4205,
        )
        .unwrap();
        let flag =
            entries.iter().find(|(k, _)| k == "tokenizer.ggml.add_space_prefix").map(|(_, v)| v.clone());
        assert_eq!(flag, Some(MetadataValue::Bool(false)), "Gemma prefixes no space");
    }

    #[test]
    fn tokenizers_the_engine_lacks_are_refused_with_the_reason() {
        let unigram = serde_json::json!({"model": {"type": "Unigram", "vocab": [["a", -1.0]]}});
        let error = tokenizer_metadata(&unigram, &Value::Null, 1).unwrap_err().to_string();
        assert!(error.contains("Unigram tokenizers do not convert"), "{error}");
        let wordpiece = serde_json::json!({"model": {"type": "WordPiece", "vocab": {"a": 0}}});
        let error = tokenizer_metadata(&wordpiece, &Value::Null, 1).unwrap_err().to_string();
        assert!(error.contains("WordPiece"), "{error}");
        let mut split_words = read(&committed("mistral").join("tokenizer.json"));
        split_words["normalizer"] = Value::Null;
        split_words["pre_tokenizer"] = serde_json::json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true});
        let error = tokenizer_metadata(&split_words, &Value::Null, 4221).unwrap_err().to_string();
        assert!(error.contains("splits words at spaces"), "{error}");
    }
}
