//! Phi 3 and 3.5 (mini): Llama's pre-norm layer with NEOX RoPE over fused tensors:
//! `attn_qkv` holds the q, k and v rows in that order, and `ffn_up` holds 2·ffn rows, the gate's
//! then the up projection's (transformers' `gate_up_proj`, chunked gate first). Both are cut
//! into their parts' row ranges at upload and stacked again, so decode still reads each in one
//! dispatch.
//!
//! LongRoPE: `rope_factors_short.weight` and `rope_factors_long.weight` divide the RoPE
//! frequencies per pair. Transformers picks by the current sequence length; a KV cache keeps
//! keys rotated at earlier lengths, so we pick once per session, as llama.cpp does: the long
//! factors when the session's context exceeds `rope.scaling.original_context_length`. Cos and
//! sin are multiplied by the attention factor in both cases, as transformers does:
//! `rope.scaling.attn_factor`, or sqrt(1 + ln(s)/ln(original)) with s = context_length/original
//! when the file has no key (1 when s ≤ 1). Sliding windows (Phi-3 mini 4k) are not applied,
//! as in llama.cpp.

use super::{ArchitectureSpec, LayerLayout, Storage};
use crate::model::{ConfigReader, LongRope, ModelConfig, ModelError};

pub struct Phi3;

impl ArchitectureSpec for Phi3 {
    fn name(&self) -> &'static str {
        "phi3"
    }

    fn configure(&self, reader: &ConfigReader, config: &mut ModelConfig) -> Result<(), ModelError> {
        let pairs = config.rope_dim as usize / 2;
        let short = reader.f32_tensor("rope_factors_short.weight", pairs)?;
        let long = reader.f32_tensor("rope_factors_long.weight", pairs)?;
        if short.is_none() && long.is_none() {
            return Ok(());
        }
        let original_context =
            reader.u32("rope.scaling.original_context_length")?.unwrap_or(config.train_context).max(1);
        let attention_factor = match reader.f32("rope.scaling.attn_factor")? {
            Some(factor) if factor.is_finite() && factor > 0.0 => factor,
            Some(factor) => {
                return Err(ModelError::InvalidConfig(format!("rope attention factor {factor}")));
            }
            None => long_rope_attention_factor(config.train_context, original_context),
        };
        config.rope.attention_factor = attention_factor;
        config.rope.divisors = short;
        if let Some(long) = long {
            let mut frequencies = config.rope.clone();
            frequencies.divisors = Some(long);
            config.rope_long = Some(LongRope { original_context, frequencies });
        }
        Ok(())
    }

    fn rope_scaling_types(&self) -> &'static [&'static str] {
        &["longrope", "su"]
    }

    fn layout(&self) -> LayerLayout {
        LayerLayout { qkv: Storage::Fused, gate_up: Storage::Fused, ..LayerLayout::PLAIN }
    }
}

/// Transformers' LongRoPE attention factor for a model trained to `context` tokens from
/// `original` ones.
fn long_rope_attention_factor(context: u32, original: u32) -> f32 {
    let scale = f64::from(context) / f64::from(original);
    if scale <= 1.0 || original <= 1 {
        return 1.0;
    }
    (1.0 + scale.ln() / f64::from(original).ln()).sqrt() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_factor_of_phi_3_5_mini() {
        // 131,072 tokens from 4,096: sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12).
        let factor = long_rope_attention_factor(131_072, 4096);
        assert!((f64::from(factor) - (1.0f64 + 5.0 / 12.0).sqrt()).abs() < 1e-6, "{factor}");
        assert_eq!(long_rope_attention_factor(4096, 4096), 1.0);
    }
}
