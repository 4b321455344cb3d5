//! Byte-level BPE (`tokenizer.ggml.model = "gpt2"`) as a `tokenizers` BPE model: regex
//! pre-tokenizer, bytes mapped to GPT-2's printable alphabet, then the ranked merges.

use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{PreTokenizerWrapper, SplitDelimiterBehavior};

use super::byte_alphabet::char_for_byte;
use super::pre_tokenizer::PreTokenizerRules;
use super::{TokenizerError, TokenizerModel, TokenizerSpec};

fn build_error(source: tokenizers::Error) -> TokenizerError {
    TokenizerError::Build { model: TokenizerModel::ByteLevelBpe.name(), source }
}

pub(super) fn model(
    spec: &TokenizerSpec,
    vocab: Vocab,
    rules: PreTokenizerRules,
) -> Result<BPE, TokenizerError> {
    let merges = merges(spec, &vocab);
    BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(rules.ignore_merges)
        .build()
        .map_err(build_error)
}

pub(super) fn pre_tokenizer(
    rules: PreTokenizerRules,
    vocab: &Vocab,
) -> Result<PreTokenizerWrapper, TokenizerError> {
    let isolate = |regex: String| -> Result<PreTokenizerWrapper, TokenizerError> {
        Split::new(SplitPattern::Regex(regex), SplitDelimiterBehavior::Isolated, false)
            .map(Into::into)
            .map_err(build_error)
    };
    let mut steps = Vec::with_capacity(rules.regexes.len() + 2);
    for regex in rules.regexes {
        steps.push(isolate(regex.to_string())?);
    }
    // The regexes already split the text; this step only maps bytes to the GPT-2 alphabet.
    steps.push(ByteLevel::new(false, false, false).into());
    if let Some(class) = missing_bytes_class(vocab) {
        steps.push(isolate(class)?);
    }
    Ok(Sequence::new(steps).into())
}

/// A regex class of the alphabet characters the vocabulary lacks (SmolLM2 has no token for 21
/// bytes), or `None`. Such a byte yields no token, but in llama.cpp it still stands between its
/// neighbours and keeps them from merging; `tokenizers` would drop it first and merge across
/// it, so each one is split off as a word of its own.
fn missing_bytes_class(vocab: &Vocab) -> Option<String> {
    let missing: String = (0..=255u8)
        .map(char_for_byte)
        .filter(|c| !vocab.contains_key(c.encode_utf8(&mut [0; 4]) as &str))
        .map(|c| format!("\\x{{{:X}}}", u32::from(c)))
        .collect();
    (!missing.is_empty()).then(|| format!("[{missing}]"))
}

/// `"left right"` pairs in rank order. As in llama.cpp the separator is the first space after
/// the first character; merges that cannot produce a vocabulary token (malformed, or naming
/// tokens the vocabulary lacks) are left out, which keeps the others' relative ranks.
fn merges(spec: &TokenizerSpec, vocab: &Vocab) -> Vec<(String, String)> {
    spec.merges
        .iter()
        .filter_map(|merge| {
            let (separator, _) = merge.char_indices().skip(1).find(|&(_, c)| c == ' ')?;
            let (left, right) = (&merge[..separator], &merge[separator + 1..]);
            let known = vocab.contains_key(left)
                && vocab.contains_key(right)
                && vocab.contains_key(&format!("{left}{right}"));
            known.then(|| (left.to_string(), right.to_string()))
        })
        .collect()
}
