//! Llama (Llama 2/3.x, Mistral 7B, SmolLM2): pre-norm attention with grouped-query heads and
//! interleaved RoPE (GGUF stores Q/K permuted for it), then a SiLU-gated feed-forward block.
//! Llama 3.1/3.2 scale RoPE per frequency (`llama3` scaling): the file's `rope_freqs.weight`
//! holds the divisors, or they are computed from the scaling metadata when it is absent.
//!
//! `record_pre_norm_layer` is also the layer of Qwen 2/3 and Phi 3, which differ in their
//! tensors (biases, q/k norms, fused matrices) and RoPE pair style only.

use std::f64::consts::PI;

use super::{ArchitectureSpec, LayerContext, LayerEnds, LayerInputs, LayerLayout};
use crate::{
    gpu::OpList,
    kernels::{
        elementwise::Activation,
        fused_qk::{QkNorms, QkStep},
        rope::RopeStyle,
        KernelError,
    },
    model::{ConfigReader, ModelConfig, ModelError},
};

pub struct Llama;

impl ArchitectureSpec for Llama {
    fn name(&self) -> &'static str {
        "llama"
    }

    fn configure(&self, reader: &ConfigReader, config: &mut ModelConfig) -> Result<(), ModelError> {
        let pairs = config.rope_dim as usize / 2;
        config.rope.divisors = match reader.f32_tensor("rope_freqs.weight", pairs)? {
            Some(divisors) => Some(divisors),
            None if reader.str("rope.scaling.type")? == Some("llama3") => {
                let scaling = Llama3Scaling {
                    factor: reader.f32("rope.scaling.factor")?.unwrap_or(8.0),
                    low_freq_factor: reader.f32("rope.scaling.low_freq_factor")?.unwrap_or(1.0),
                    high_freq_factor: reader.f32("rope.scaling.high_freq_factor")?.unwrap_or(4.0),
                    original_context: reader.u32("rope.scaling.original_context_length")?.unwrap_or(8192),
                };
                Some(scaling.divisors(config.rope.theta_base, config.rope_dim)?)
            }
            None => None,
        };
        Ok(())
    }

    fn rope_scaling_types(&self) -> &'static [&'static str] {
        &["llama3"]
    }

    fn layout(&self) -> LayerLayout {
        LayerLayout::PLAIN
    }

    fn rope_style(&self) -> RopeStyle {
        RopeStyle::Interleaved
    }
}

/// Llama 3.1's RoPE scaling (transformers' `rope_type: llama3`): wavelengths shorter than
/// original_context/high_freq_factor keep their frequency, those longer than
/// original_context/low_freq_factor are divided by `factor`, and the band between blends the two.
pub struct Llama3Scaling {
    pub factor: f32,
    pub low_freq_factor: f32,
    pub high_freq_factor: f32,
    pub original_context: u32,
}

impl Llama3Scaling {
    /// The frequency divisor of each pair of `rope_dim`.
    pub fn divisors(&self, theta_base: f32, rope_dim: u32) -> Result<Vec<f32>, ModelError> {
        let (factor, low, high) =
            (f64::from(self.factor), f64::from(self.low_freq_factor), f64::from(self.high_freq_factor));
        if !(factor >= 1.0 && low > 0.0 && high > low && self.original_context > 0) {
            return Err(ModelError::InvalidConfig(format!(
                "llama3 RoPE scaling: factor {factor}, low/high frequency factors {low}/{high}"
            )));
        }
        let original = f64::from(self.original_context);
        let (low_wavelength, high_wavelength) = (original / low, original / high);
        Ok((0..rope_dim / 2)
            .map(|pair| {
                let frequency = f64::from(theta_base).powf(-2.0 * f64::from(pair) / f64::from(rope_dim));
                let wavelength = 2.0 * PI / frequency;
                let divisor = if wavelength < high_wavelength {
                    1.0
                } else if wavelength > low_wavelength {
                    factor
                } else {
                    let smooth = (original / wavelength - low) / (high - low);
                    1.0 / ((1.0 - smooth) / factor + smooth)
                };
                divisor as f32
            })
            .collect())
    }
}

/// A pre-norm layer: RMSNorm → q/k/v (+ biases) → (per-head q/k norm) → RoPE → attention →
/// output, residual; RMSNorm → SiLU-gated FFN, residual.
pub(super) fn record_pre_norm_layer<'a>(
    lc: &LayerContext<'a>,
    ops: &mut OpList,
    layer: &LayerInputs<'a>,
    style: RopeStyle,
) -> Result<(), KernelError> {
    let LayerInputs { index, weights: w, cache, rope, next_norm } = *layer;
    let acts = lc.acts;
    let name = |what: &str| format!("blk.{index}.{what}");

    let bias = lc.qkv_projections(ops, &w.qkv, w.qkv_bias.as_ref())?;
    let norms = w.qk_norms.as_ref().map(|n| QkNorms { q: &n.q, k: &n.k, eps: lc.config.rms_eps });
    let qk = QkStep { rows: lc.qkv_rows(), norms, table: rope, style, bias };
    let qk_label = if norms.is_some() { "qk_norm_rope_store" } else { "rope_store" };
    lc.attention(ops, &name(qk_label), &name("attention"), &qk, cache, 0)?;
    lc.linear(ops, &name("attn_output"), &w.o, &acts.attention, &acts.projection)?;
    lc.residual_norm(
        ops,
        &name("attn_residual+ffn_norm"),
        LayerEnds { post_norm: None, next_norm: &w.ffn_norm },
    )?;

    lc.gated_ffn_input(ops, &name("ffn_silu"), &w.gate_up, Activation::Silu)?;
    lc.linear(ops, &name("ffn_down"), &w.down, &acts.gate, &acts.projection)?;
    lc.residual_norm(ops, &name("ffn_residual+next_norm"), LayerEnds { post_norm: None, next_norm })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama3_divisors_keep_high_frequencies_and_divide_low_ones() {
        // Llama 3.1 8B's scaling.
        let scaling = Llama3Scaling {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_context: 8192,
        };
        let divisors = scaling.divisors(500_000.0, 128).unwrap();
        assert_eq!(divisors.len(), 64);
        assert_eq!(divisors[0], 1.0);
        assert_eq!(divisors[63], 8.0);
        // Wavelengths 2048..8192 blend: strictly between, and rising with the wavelength.
        let blended: Vec<f32> = divisors.iter().copied().filter(|&d| d > 1.0 && d < 8.0).collect();
        assert!(!blended.is_empty() && blended.windows(2).all(|w| w[0] < w[1]), "{divisors:?}");
        let pair = divisors.iter().position(|&d| d > 1.0 && d < 8.0).unwrap();
        let wavelength = 2.0 * PI * 500_000f64.powf(2.0 * pair as f64 / 128.0);
        let smooth = (8192.0 / wavelength - 1.0) / 3.0;
        let expected = 1.0 / ((1.0 - smooth) / 8.0 + smooth);
        assert!((f64::from(divisors[pair]) - expected).abs() < 1e-5, "{} vs {expected}", divisors[pair]);
    }

    #[test]
    fn llama3_scaling_refuses_inverted_bands() {
        let scaling = Llama3Scaling {
            factor: 8.0,
            low_freq_factor: 4.0,
            high_freq_factor: 1.0,
            original_context: 8192,
        };
        assert!(scaling.divisors(500_000.0, 128).is_err());
    }
}
