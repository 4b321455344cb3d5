//! GPU memory a model takes, worked out from the file before anything is allocated: what the
//! loader checks against the adapter's budget, and what the model manager's fit badges show.

use serde::Serialize;

use super::{forward::ActivationSizes, weights::stack_type, ModelConfig};
use crate::{
    gguf::{GgufFile, TensorInfo},
    kernels::{attention::KvCache, decode_attention::HeadShape, rope::RopeTable},
    store::ByteSize,
};

/// Bytes of GPU memory, by what holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryFootprint {
    pub weights: u64,
    /// Keys and values of one session at the model's context length.
    pub kv_cache: u64,
    /// Per-step buffers of one session: activations, logits, RoPE tables.
    pub scratch: u64,
}

/// What a session's buffers are sized by.
#[derive(Debug, Clone, Copy)]
pub struct SessionShape {
    pub context_len: u32,
    /// Tokens per prefill step.
    pub max_batch: u32,
    /// Keys and values stored as f16 (adapters with shader-f16), else f32.
    pub kv_f16: bool,
    /// The adapter's largest storage binding (split-K scratch is capped at it).
    pub max_storage_binding: u64,
    /// The adapter runs prefill products on tensor cores from f16 operands
    /// (`kernels::matmul_half::runs_on`), whose scratch then counts.
    pub half_products: bool,
}

impl MemoryFootprint {
    pub fn total(&self) -> u64 {
        self.weights + self.kv_cache + self.scratch
    }

    /// The footprint of `config`'s model from `gguf` in a session of `shape`.
    pub fn estimate(gguf: &GgufFile, config: &ModelConfig, shape: &SessionShape) -> MemoryFootprint {
        let weights = config
            .expected_tensors()
            .iter()
            .filter_map(|(name, _)| gguf.tensor(name))
            .map(|t| t.n_bytes)
            .sum::<u64>()
            + widening_bytes(gguf, config);
        MemoryFootprint { weights, ..Self::session(config, shape) }
    }

    /// The session part alone (no weights): KV cache and scratch.
    fn session(config: &ModelConfig, shape: &SessionShape) -> MemoryFootprint {
        let cache_lens =
            (0..config.n_layers).map(|layer| config.kv_cache_len(layer, shape.context_len, shape.max_batch));
        let kv_cache = cache_lens
            .clone()
            .map(|len| KvCache::bytes(len, config.n_kv_heads, config.head_dim, shape.kv_f16))
            .sum();
        // Decode attention splits a layer's keys (its window where it has one) into slices.
        let attention_slices: u64 = (0..config.n_layers)
            .zip(cache_lens)
            .map(|(layer, cache_len)| {
                let max_keys = match config.is_sliding_layer(layer) {
                    true => config.sliding_window.min(cache_len),
                    false => cache_len,
                };
                HeadShape {
                    n_heads: config.n_heads,
                    n_kv_heads: config.n_kv_heads,
                    head_dim: config.head_dim,
                }
                .split_scratch_bytes(max_keys)
            })
            .sum();
        let rope_tables = 1 + u64::from(config.rope_local.is_some());
        let scratch =
            ActivationSizes::new(config, shape.max_batch, shape.max_storage_binding, shape.half_products)
                .total()
                + rope_tables * RopeTable::bytes(config.rope_dim, shape.context_len)
                + attention_slices;
        MemoryFootprint { weights: 0, kv_cache, scratch }
    }

    /// The longest context (a multiple of 256, at least 256) whose footprint stays within
    /// `budget`, if even the shortest does not.
    pub fn longest_context_within(
        &self,
        config: &ModelConfig,
        shape: &SessionShape,
        budget: u64,
    ) -> Option<u32> {
        const STEP: u32 = 256;
        let fits = |context_len: u32| {
            let session = Self::session(
                config,
                &SessionShape { context_len, max_batch: shape.max_batch.min(context_len), ..*shape },
            );
            self.weights + session.kv_cache + session.scratch <= budget
        };
        if !fits(STEP) {
            return None;
        }
        // The footprint grows with the context: the last fitting multiple by bisection.
        let (mut low, mut high) = (1, shape.context_len / STEP + 1);
        while high - low > 1 {
            let middle = (low + high) / 2;
            if fits(middle * STEP) {
                low = middle
            } else {
                high = middle
            }
        }
        Some(low * STEP)
    }
}

/// Extra bytes of matrices the loader widens to Q8_0 to stack them with a Q8_0 neighbour
/// (`weights::stack_type`): q/k/v and gate/up of each layer.
fn widening_bytes(gguf: &GgufFile, config: &ModelConfig) -> u64 {
    let mut extra = 0;
    for layer in 0..config.n_layers {
        for group in [&["attn_q", "attn_k", "attn_v"][..], &["ffn_gate", "ffn_up"]] {
            let parts: Vec<&TensorInfo> =
                group.iter().filter_map(|part| gguf.tensor(&format!("blk.{layer}.{part}.weight"))).collect();
            let Some(first) = parts.first() else { continue };
            let joined = parts.iter().try_fold(first.ggml_type, |ty, part| stack_type(ty, part.ggml_type));
            if let Some(joined) = joined {
                for part in parts.iter().filter(|part| part.ggml_type != joined) {
                    let widened = part.n_elements() / joined.block_len() as u64 * joined.block_bytes() as u64;
                    extra += widened.saturating_sub(part.n_bytes);
                }
            }
        }
    }
    extra
}

/// A model refused before upload: what it needs, what there is, and what would fit.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{model} needs {needed} of GPU memory (weights {weights}, KV cache for {context_len} tokens {kv_cache}, scratch {scratch}) \
     but the budget on {adapter} ({tier}) is {budget}; {advice}",
    needed = ByteSize(self.footprint.total()),
    weights = ByteSize(self.footprint.weights),
    kv_cache = ByteSize(self.footprint.kv_cache),
    scratch = ByteSize(self.footprint.scratch),
    budget = ByteSize(self.budget),
)]
pub struct ModelTooLarge {
    pub model: String,
    pub adapter: String,
    pub tier: &'static str,
    pub footprint: MemoryFootprint,
    pub context_len: u32,
    pub budget: u64,
    pub advice: FitAdvice,
}

/// What would make a model that does not fit fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum FitAdvice {
    /// A shorter context fits with these weights.
    ShorterContext { context_len: u32 },
    /// The weights alone take too many bytes: they would have to take at most `weights_within`,
    /// as the quantization `suggestion` might make them.
    SmallerQuantization { weights_within: u64, suggestion: Option<&'static str> },
}

impl std::fmt::Display for FitAdvice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitAdvice::ShorterContext { context_len } => {
                write!(f, "a context of {context_len} tokens would fit (--ctx {context_len})")
            }
            FitAdvice::SmallerQuantization { weights_within, suggestion } => {
                write!(
                    f,
                    "even a short context does not fit with these weights: they would have to take at most {}",
                    ByteSize(*weights_within)
                )?;
                match suggestion {
                    Some(quant) => write!(f, ", as a {quant} file of this model might"),
                    None => write!(f, ", which no quantization of this model reaches"),
                }
            }
        }
    }
}

/// llama.cpp's file types the engine loads, by their average bits per weight on 7B–8B models,
/// largest first.
const QUANTIZATION_BITS: [(&str, f32); 9] = [
    ("F16", 16.0),
    ("BF16", 16.0),
    ("Q8_0", 8.5),
    ("Q6_K", 6.56),
    ("Q5_K_M", 5.69),
    ("Q4_K_M", 4.89),
    ("IQ4_XS", 4.25),
    ("Q3_K_M", 3.91),
    ("Q2_K", 2.96),
];

/// The average bits per weight of llama.cpp's file type `label` (`Q4_K_M`, any case), where the
/// engine knows it.
pub fn quantization_bits(label: &str) -> Option<f32> {
    QUANTIZATION_BITS.iter().find(|(name, _)| name.eq_ignore_ascii_case(label)).map(|(_, bits)| *bits)
}

impl FitAdvice {
    /// The longest context that fits with these weights, else a quantization whose weights
    /// would fit with a short context: the file's own (`quantization`, llama.cpp's label) scaled
    /// down by the bytes that must go, so that a model whose embeddings keep more bits than its
    /// label says (small models with large vocabularies) is not advised a larger type.
    pub fn for_budget(
        footprint: &MemoryFootprint,
        gguf: &GgufFile,
        config: &ModelConfig,
        shape: &SessionShape,
        budget: u64,
        quantization: &str,
    ) -> FitAdvice {
        if let Some(context_len) = footprint.longest_context_within(config, shape, budget) {
            return FitAdvice::ShorterContext { context_len };
        }
        let short = MemoryFootprint::session(
            config,
            &SessionShape { context_len: 256, max_batch: shape.max_batch.min(256), ..*shape },
        );
        let parameters: u64 = config
            .expected_tensors()
            .iter()
            .filter_map(|(name, _)| gguf.tensor(name))
            .map(TensorInfo::n_elements)
            .sum();
        let weight_budget = budget.saturating_sub(short.kv_cache + short.scratch);
        let shrink = weight_budget as f64 / footprint.weights.max(1) as f64;
        let file_bits = footprint.weights as f64 * 8.0 / parameters.max(1) as f64;
        let label_bits = quantization_bits(quantization).map_or(file_bits, f64::from);
        let target = (label_bits * shrink) as f32;
        let suggestion = QUANTIZATION_BITS.iter().find(|(_, bits)| *bits <= target).map(|(name, _)| *name);
        FitAdvice::SmallerQuantization { weights_within: weight_budget, suggestion }
    }
}
