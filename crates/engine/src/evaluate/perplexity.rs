//! Perplexity with llama.cpp's definition (`llama-perplexity`): the text is tokenized whole,
//! cut into consecutive chunks of `n_ctx` tokens (the remainder dropped), each chunk's first
//! token replaced by BOS where the model adds one, each chunk run from an empty cache, and
//! the second half of each chunk scored: tokens n_ctx/2 + 1 .. n_ctx - 1.

use serde::Serialize;

use super::Scorer;
use crate::{GenerateError, LoadedModel};

#[derive(Debug, Clone, Serialize)]
pub struct PerplexityResult {
    pub perplexity: f64,
    pub mean_nll: f64,
    pub n_ctx: usize,
    pub chunks: usize,
    pub text_tokens: usize,
    pub scored_tokens: usize,
}

/// `progress(chunk, chunks, running_perplexity)` after each chunk.
pub fn perplexity(
    model: &std::sync::Arc<LoadedModel>,
    text: &str,
    n_ctx: usize,
    progress: &mut dyn FnMut(usize, usize, f64),
) -> Result<PerplexityResult, GenerateError> {
    let tokenizer = model.tokenizer();
    let tokens = tokenizer.encode(text, tokenizer.add_bos())?;
    if n_ctx < 4 {
        return Err(GenerateError::InvalidRequest(format!(
            "context of {n_ctx} tokens is too small to score"
        )));
    }
    let chunks = tokens.len() / n_ctx;
    if chunks == 0 {
        return Err(GenerateError::InvalidRequest(format!(
            "the text has {} tokens, fewer than one context of {n_ctx}",
            tokens.len()
        )));
    }
    let mut scorer = Scorer::new(model)?;
    let mut total = 0.0;
    let mut scored = 0usize;
    for chunk in 0..chunks {
        let mut window = tokens[chunk * n_ctx..(chunk + 1) * n_ctx].to_vec();
        if let (true, Some(bos)) = (tokenizer.add_bos(), tokenizer.bos_id()) {
            window[0] = bos;
        }
        let nlls = scorer.negative_log_likelihoods(&window, n_ctx / 2 + 1)?;
        total += nlls.iter().sum::<f64>();
        scored += nlls.len();
        progress(chunk, chunks, (total / scored as f64).exp());
    }
    let mean_nll = total / scored as f64;
    Ok(PerplexityResult {
        perplexity: mean_nll.exp(),
        mean_nll,
        n_ctx,
        chunks,
        text_tokens: tokens.len(),
        scored_tokens: scored,
    })
}
