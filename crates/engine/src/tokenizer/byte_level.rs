//! Byte-level BPE (`tokenizer.ggml.model = "gpt2"`) as a `tokenizers` BPE model: regex
//! pre-tokenizer, bytes mapped to GPT-2's printable alphabet, then the ranked merges.

use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{PreTokenizerWrapper, SplitDelimiterBehavior};

use super::pre_tokenizer::PreTokenizerRules;
use super::{TokenizerError, TokenizerModel, TokenizerSpec};

fn build_error(source: tokenizers::Error) -> TokenizerError {
    TokenizerError::Build {
        model: TokenizerModel::ByteLevelBpe.name(),
        source,
    }
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
) -> Result<PreTokenizerWrapper, TokenizerError> {
    let mut steps = Vec::with_capacity(rules.regexes.len() + 1);
    for regex in rules.regexes {
        let split = Split::new(
            SplitPattern::Regex(regex.to_string()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(build_error)?;
        steps.push(split.into());
    }
    // The regexes already split the text; this step only maps bytes to the GPT-2 alphabet.
    steps.push(ByteLevel::new(false, false, false).into());
    Ok(Sequence::new(steps).into())
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
