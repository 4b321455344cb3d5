//! A Hugging Face `tokenizer.json` (byte-level BPE: Llama 3, Qwen 2/3, SmolLM) and
//! `tokenizer_config.json` read into the engine's `tokenizer.*` metadata, as llama.cpp's
//! converter writes it: the vocabulary by id (padded to the embedding's rows), token types,
//! merges, the pre-tokenizer's name, special token ids and the chat template.

use std::collections::HashMap;

use doppler_engine::gguf::{MetadataArray, MetadataValue, StringArray};
use serde_json::Value;

use super::ConvertError;

/// llama.cpp's token types.
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const UNUSED: i32 = 5;

/// The tokenizer as metadata entries, with `vocab_rows` tokens (the embedding's rows: ids
/// the tokenizer leaves unnamed become unused `[PAD<id>]` tokens).
pub(crate) fn tokenizer_metadata(
    tokenizer: &Value,
    tokenizer_config: &Value,
    vocab_rows: usize,
) -> Result<Vec<(String, MetadataValue)>, ConvertError> {
    let bad = |reason: String| ConvertError::Tokenizer { reason };
    let model = &tokenizer["model"];
    if model["type"].as_str() != Some("BPE") || !is_byte_level(tokenizer) {
        return Err(bad("only byte-level BPE tokenizers (Llama 3, Qwen, SmolLM) convert for now".into()));
    }
    let vocab = model["vocab"].as_object().ok_or_else(|| bad("model.vocab is missing".into()))?;
    let mut by_id: Vec<Option<(String, i32)>> = vec![None; vocab_rows];
    let mut place = |id: u64, text: &str, kind: i32| -> Result<(), ConvertError> {
        let slot = by_id.get_mut(id as usize).ok_or_else(|| {
            bad(format!("token {text:?} has id {id}, past the embedding's {vocab_rows} rows"))
        })?;
        *slot = Some((text.to_string(), kind));
        Ok(())
    };
    for (text, id) in vocab {
        place(id.as_u64().ok_or_else(|| bad(format!("token {text:?} has no integer id")))?, text, NORMAL)?;
    }
    for added in tokenizer["added_tokens"].as_array().into_iter().flatten() {
        let (Some(id), Some(text)) = (added["id"].as_u64(), added["content"].as_str()) else {
            return Err(bad(format!("an added token without id or content: {added}")));
        };
        let kind = if added["special"].as_bool().unwrap_or(false) { CONTROL } else { USER_DEFINED };
        place(id, text, kind)?;
    }
    let mut tokens = StringArray::new();
    let mut types = Vec::with_capacity(vocab_rows);
    let mut ids = HashMap::new();
    for (id, slot) in by_id.into_iter().enumerate() {
        let (text, kind) = slot.unwrap_or_else(|| (format!("[PAD{id}]"), UNUSED));
        tokens.push(&text);
        types.push(kind);
        ids.insert(text, id as u32);
    }
    let merges =
        merges(&model["merges"]).ok_or_else(|| bad("model.merges is missing or malformed".into()))?;
    let mut entries = vec![
        ("tokenizer.ggml.model".to_string(), MetadataValue::String("gpt2".into())),
        ("tokenizer.ggml.pre".to_string(), MetadataValue::String(pre_tokenizer_name(tokenizer)?.into())),
        ("tokenizer.ggml.tokens".to_string(), MetadataValue::Array(MetadataArray::String(tokens))),
        ("tokenizer.ggml.token_type".to_string(), MetadataValue::Array(MetadataArray::I32(types))),
        ("tokenizer.ggml.merges".to_string(), MetadataValue::Array(MetadataArray::String(merges))),
    ];
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
    if let Some(add_bos) = tokenizer_config["add_bos_token"].as_bool() {
        entries.push(("tokenizer.ggml.add_bos_token".to_string(), MetadataValue::Bool(add_bos)));
    }
    if let Some(template) = chat_template(&tokenizer_config["chat_template"]) {
        entries.push(("tokenizer.chat_template".to_string(), MetadataValue::String(template)));
    }
    Ok(entries)
}

fn is_byte_level(tokenizer: &Value) -> bool {
    let mentions_byte_level = |part: &Value| part.to_string().contains("\"ByteLevel\"");
    mentions_byte_level(&tokenizer["pre_tokenizer"]) || mentions_byte_level(&tokenizer["decoder"])
}

/// `"left right"` strings, from either of tokenizer.json's merge forms.
fn merges(merges: &Value) -> Option<StringArray> {
    merges
        .as_array()?
        .iter()
        .map(|merge| match merge {
            Value::String(text) => Some(text.clone()),
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(left), Value::String(right)] => Some(format!("{left} {right}")),
                _ => None,
            },
            _ => None,
        })
        .collect::<Option<Vec<String>>>()
        .map(|merges| merges.iter().collect())
}

/// The engine's pre-tokenizer name for the regexes tokenizer.json splits words with, found
/// by their telling parts (as llama.cpp names them): Llama 3 groups digits by three, Qwen 2
/// splits single digits inside its word regex, SmolLM splits digits first, GPT-2 neither.
fn pre_tokenizer_name(tokenizer: &Value) -> Result<&'static str, ConvertError> {
    let pre = tokenizer["pre_tokenizer"].to_string();
    let name = if pre.contains(r"\\p{N}{1,3}") {
        "llama-bpe"
    } else if pre.contains(r"\\p{L}+|\\p{N}|") {
        "qwen2"
    } else if pre.contains("\"Digits\"") {
        "smollm"
    } else if pre.contains("\"ByteLevel\"") && !pre.contains("\"Split\"") {
        "gpt2"
    } else {
        return Err(ConvertError::Tokenizer { reason: format!("an unknown pre-tokenizer: {pre:.300}") });
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
