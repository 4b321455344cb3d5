//! Evaluation: logits after a prompt, per-token negative log-likelihoods, and perplexity
//! with llama.cpp's definition. Generation never reads logits back; this does.

mod logits;
mod perplexity;

pub use logits::Scorer;
pub use perplexity::{perplexity, PerplexityResult};
