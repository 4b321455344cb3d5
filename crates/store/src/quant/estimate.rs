//! The memory a repository's GGUF model will take on the GPU, before any of it is downloaded:
//! weights + KV cache at the planned context + scratch, as the engine's `MemoryFootprint`.
//!
//! The engine's exact estimate (`MemoryFootprint::estimate`) needs the model's configuration
//! (layers, key/value heads, head width), which only the GGUF header holds. The header puts the
//! tokenizer (megabytes for a 150k–260k vocabulary) before the tensor table, so reading it
//! through Range requests would cost every repository view several megabytes and a round trip
//! per file. The listing already gives each file's size and quantization label, and for the
//! budget what matters is the order of magnitude of the session's share; so the parts that
//! depend on the architecture are estimated from the parameter count, through the shape
//! typical decoders have (see `DecoderShape`). Once a model is installed, the loader checks
//! the exact footprint against the budget.

use doppler_engine::model::{quantization_bits, MemoryFootprint};
use serde::Serialize;

use super::{recommend, Fit, GgufChoice};

/// Bits per weight assumed when the label is unknown or missing: few bits mean many
/// parameters for the size, which errs toward a larger KV cache.
const UNKNOWN_LABEL_BITS: f32 = 4.0;

/// The engine's default context (the model's training context, capped at 8192).
pub const DEFAULT_PLANNED_CONTEXT: u32 = 8192;

/// The session a model is planned for: its context, and how keys and values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedSession {
    pub context_len: u32,
    /// Keys and values as f16 (adapters with shader-f16), else f32.
    pub kv_f16: bool,
}

impl Default for PlannedSession {
    fn default() -> Self {
        PlannedSession { context_len: DEFAULT_PLANNED_CONTEXT, kv_f16: true }
    }
}

/// The shape of a decoder with `parameters` weights, as Llama, Qwen, Mistral and Gemma models
/// from 1B to 8B are built: about `12 · width²` parameters per layer, a layer for every 128 of
/// width, and key/value heads a quarter as wide as the model (grouped-query attention).
/// Against Llama 3.1 8B and Llama 3.2 3B the KV cache it gives is within 30%; Qwen2.5 7B's
/// narrower key/value heads need less than half of it (erring high is the safe side). Models
/// with full multi-head attention (Phi-3) need more, and small deep models (SmolLM2 135M) too,
/// though their KV cache is small in absolute terms.
struct DecoderShape {
    width: f64,
}

impl DecoderShape {
    const WIDTH_PER_LAYER: f64 = 128.0;
    const PARAMETERS_PER_WIDTH_SQUARED: f64 = 12.0;
    const KV_SHARE_OF_WIDTH: f64 = 0.25;
    /// Per-token activation floats of a prefill step, in units of the width: hidden, normed,
    /// q, k, v, attention, projection, the gated feed-forward (about 3.5 widths, twice) and
    /// the split-K partial sums.
    const ACTIVATION_FLOATS_PER_WIDTH: f64 = 16.0;
    /// Tokens per prefill step (the engine's default batch).
    const PREFILL_TOKENS: f64 = 128.0;
    /// Logits, RoPE tables and attention slices: a few megabytes whatever the model.
    const FIXED_SCRATCH: u64 = 16 << 20;

    fn of(parameters: f64) -> DecoderShape {
        let width = (Self::WIDTH_PER_LAYER * parameters / Self::PARAMETERS_PER_WIDTH_SQUARED).max(1.0).cbrt();
        DecoderShape { width }
    }

    fn kv_bytes_per_token(&self, kv_f16: bool) -> f64 {
        let layers = self.width / Self::WIDTH_PER_LAYER;
        let value_bytes = if kv_f16 { 2.0 } else { 4.0 };
        2.0 * layers * self.width * Self::KV_SHARE_OF_WIDTH * value_bytes
    }

    fn scratch_bytes(&self) -> u64 {
        let activations = Self::PREFILL_TOKENS * self.width * Self::ACTIVATION_FLOATS_PER_WIDTH * 4.0;
        activations as u64 + Self::FIXED_SCRATCH
    }
}

/// The estimated footprint of `choice` in a session of `session`. The weights are the file
/// size: the tensors plus a header of a few megabytes, so a little high.
pub fn estimate_footprint(choice: &GgufChoice, session: &PlannedSession) -> MemoryFootprint {
    let bits = choice.quantization.as_deref().and_then(quantization_bits).unwrap_or(UNKNOWN_LABEL_BITS);
    let parameters = choice.size as f64 * 8.0 / f64::from(bits);
    let shape = DecoderShape::of(parameters);
    let kv_cache = shape.kv_bytes_per_token(session.kv_f16) * f64::from(session.context_len);
    MemoryFootprint { weights: choice.size, kv_cache: kv_cache as u64, scratch: shape.scratch_bytes() }
}

/// A GGUF choice with its estimated footprint and, against a budget, its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssessedChoice {
    #[serde(flatten)]
    pub choice: GgufChoice,
    pub footprint: MemoryFootprint,
    /// Absent when the budget is unknown.
    pub fit: Option<Fit>,
    /// The best choice for the budget (`recommend`).
    pub recommended: bool,
}

/// Every choice with its footprint in `session` and its fit against `budget`, the best one
/// marked as recommended.
pub fn assess_choices(
    choices: Vec<GgufChoice>,
    budget: Option<u64>,
    session: &PlannedSession,
) -> Vec<AssessedChoice> {
    let needed = |choice: &GgufChoice| estimate_footprint(choice, session).total();
    let recommended_name =
        budget.and_then(|budget| recommend(&choices, budget, needed)).map(|choice| choice.name.clone());
    choices
        .into_iter()
        .map(|choice| {
            let footprint = estimate_footprint(&choice, session);
            AssessedChoice {
                fit: budget.map(|budget| Fit::of(footprint.total(), budget)),
                recommended: recommended_name.as_deref() == Some(choice.name.as_str()),
                footprint,
                choice,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn choice(quantization: &str, size: u64) -> GgufChoice {
        GgufChoice {
            quantization: Some(quantization.to_string()),
            name: format!("m-{quantization}.gguf"),
            files: Vec::new(),
            size,
        }
    }

    /// Keys and values of a context of 8192 tokens, in f16, from the real configurations.
    fn real_kv(layers: u64, kv_heads: u64, head_dim: u64) -> u64 {
        2 * layers * kv_heads * head_dim * 2 * 8192
    }

    #[test]
    fn the_kv_cache_estimate_is_near_that_of_real_models() {
        let models = [
            ("Llama 3.1 8B", choice("Q4_K_M", 4_920_734_016), real_kv(32, 8, 128), 0.7..=1.3),
            ("Llama 3.2 3B", choice("Q4_K_M", 2_019_377_696), real_kv(28, 8, 128), 0.7..=1.3),
            ("Qwen2.5 7B", choice("Q4_K_M", 4_683_073_184), real_kv(28, 4, 128), 1.0..=3.0),
        ];
        for (model, choice, real, range) in models {
            let estimate = estimate_footprint(&choice, &PlannedSession::default()).kv_cache;
            let ratio = estimate as f64 / real as f64;
            assert!(range.contains(&ratio), "{model}: estimated {estimate}, real {real}");
        }
    }

    #[test]
    fn the_footprint_grows_with_the_context_and_f32_keys() {
        let model = choice("Q4_K_M", 2 * GIB);
        let short = estimate_footprint(&model, &PlannedSession { context_len: 2048, kv_f16: true });
        let long = estimate_footprint(&model, &PlannedSession { context_len: 8192, kv_f16: true });
        let wide = estimate_footprint(&model, &PlannedSession { context_len: 8192, kv_f16: false });
        assert_eq!(short.weights, 2 * GIB);
        assert_eq!(long.kv_cache / short.kv_cache, 4);
        assert_eq!(wide.kv_cache / long.kv_cache, 2);
        assert_eq!(short.scratch, long.scratch);
        assert!(short.scratch > 16 << 20 && short.scratch < 256 << 20, "{}", short.scratch);
    }

    #[test]
    fn the_session_counts_toward_the_verdict() {
        // 4.9 GB of weights alone fit 5.2 GiB; with the KV cache of 8192 tokens they do not.
        let choices = vec![choice("Q4_K_M", 4_920_734_016), choice("Q8_0", 8_540_770_880)];
        let assessed = assess_choices(choices.clone(), Some(5_600_000_000), &PlannedSession::default());
        assert_eq!(assessed[0].fit, Some(Fit::TooBig));
        assert!(assessed.iter().all(|choice| !choice.recommended));

        let assessed = assess_choices(choices.clone(), Some(16 * GIB), &PlannedSession::default());
        let verdicts: Vec<_> = assessed.iter().map(|choice| (choice.fit, choice.recommended)).collect();
        assert_eq!(verdicts, [(Some(Fit::Fits), false), (Some(Fit::Fits), true)]);

        let unknown = assess_choices(choices, None, &PlannedSession::default());
        assert!(unknown.iter().all(|choice| choice.fit.is_none() && !choice.recommended));
    }
}
