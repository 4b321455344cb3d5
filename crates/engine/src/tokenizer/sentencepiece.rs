//! SentencePiece BPE (`tokenizer.ggml.model = "llama"`) as a `tokenizers` BPE model.
//!
//! A SentencePiece BPE vocabulary has scores but no merge list: llama.cpp repeatedly joins the
//! adjacent pair whose concatenation is a token with the highest score. The same result comes
//! from a BPE model whose merges are every split of every token into two tokens, ranked by the
//! merged token's score — the construction Hugging Face's SentencePiece converter uses.

use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::{Prepend, Replace, Sequence};
use tokenizers::NormalizerWrapper;

use super::limits::MAX_SPLIT_WORK;
use super::{TokenizerError, TokenizerModel, TokenizerSpec};

const WORD_BOUNDARY: &str = "▁";

/// The BPE model: character-level start, score-ranked merges, `<0xXX>` byte fallback.
pub(super) fn model(spec: &TokenizerSpec, texts: &[String], vocab: Vocab) -> Result<BPE, TokenizerError> {
    let merges = merges_by_score(spec, texts, &vocab);
    let mut builder = BPE::builder().vocab_and_merges(vocab, merges).byte_fallback(true).fuse_unk(true);
    if let Some(unk) = spec.unk_id {
        builder = builder.unk_token(texts[unk as usize].clone());
    }
    builder
        .build()
        .map_err(|source| TokenizerError::Build { model: TokenizerModel::SentencePiece.name(), source })
}

/// Spaces become '▁'; with `add_space_prefix`, every stretch of text (the input's start, or what
/// follows a special token) also gets a leading '▁', as llama.cpp prefixes a space there.
pub(super) fn normalizer(spec: &TokenizerSpec) -> Result<NormalizerWrapper, TokenizerError> {
    let build_error = |source| TokenizerError::Build { model: TokenizerModel::SentencePiece.name(), source };
    let mut steps: Vec<NormalizerWrapper> =
        vec![Replace::new(" ", WORD_BOUNDARY).map_err(build_error)?.into()];
    if spec.add_space_prefix {
        steps.push(Prepend::new(WORD_BOUNDARY.to_string()).into());
    }
    Ok(Sequence::new(steps).into())
}

/// Finding a token's splits hashes both halves at each character boundary, so a token costs
/// its length times its splits, and so, at most, do the merges it yields: bounding the sum bounds
/// both the time and the memory of the merge list before any of it is built.
pub(super) fn check_split_work<'a>(texts: impl Iterator<Item = &'a str>) -> Result<(), TokenizerError> {
    let work = texts
        .map(|text| text.len() as u64 * text.chars().count().saturating_sub(1) as u64)
        .fold(0u64, u64::saturating_add);
    if work > MAX_SPLIT_WORK {
        return Err(TokenizerError::SplitWorkTooLarge { work, limit: MAX_SPLIT_WORK });
    }
    Ok(())
}

/// Every way to write a token as the concatenation of two tokens, highest merged score first;
/// ties keep vocabulary order (merged id, then left id, then right id).
fn merges_by_score(spec: &TokenizerSpec, texts: &[String], vocab: &Vocab) -> Vec<(String, String)> {
    struct Candidate {
        score: f32,
        merged: u32,
        left: u32,
        right: u32,
    }
    let mut candidates = Vec::new();
    for (merged, text) in texts.iter().enumerate() {
        // A duplicated text is looked up as its last id, so only that id is reachable by merging.
        if vocab.get(text) != Some(&(merged as u32)) {
            continue;
        }
        // NaN would break the ordering; -0.0 compares equal to 0.0 in llama.cpp.
        let score = match spec.score(merged) {
            s if s.is_nan() => f32::NEG_INFINITY,
            s => s + 0.0,
        };
        for (split, _) in text.char_indices().skip(1) {
            let (left, right) = text.split_at(split);
            if let (Some(&left), Some(&right)) = (vocab.get(left), vocab.get(right)) {
                candidates.push(Candidate { score, merged: merged as u32, left, right });
            }
        }
    }
    candidates.sort_unstable_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.merged.cmp(&b.merged))
            .then(a.left.cmp(&b.left))
            .then(a.right.cmp(&b.right))
    });
    candidates
        .into_iter()
        .map(|c| (texts[c.left as usize].clone(), texts[c.right as usize].clone()))
        .collect()
}
