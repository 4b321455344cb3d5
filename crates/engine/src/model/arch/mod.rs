//! The architectures the engine runs, one file each, and the registry that maps a GGUF's
//! `general.architecture` to one. An architecture owns its metadata keys beyond the common
//! ones (`config.rs`), the layout of its layer tensors, its RoPE and embedding scale, and the
//! recipe of its layer (the kernels it records through `LayerContext`).

mod gemma3;
mod llama;

pub use llama::Llama3Scaling;
mod phi3;
mod qwen2;
mod qwen3;

use std::fmt;

use serde::Serialize;

use super::{
    forward::{LayerContext, LayerEnds, LayerInputs},
    ConfigReader, ModelConfig, ModelError,
};
use crate::{
    gpu::OpList,
    kernels::{rope::RopeStyle, KernelError},
};

/// How an architecture stores two or more matrices that read the same input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Storage {
    /// One tensor each (`attn_q`, `attn_k`, `attn_v`; `ffn_gate`, `ffn_up`).
    Separate,
    /// One tensor holding them stacked by rows in that order (Phi 3: `attn_qkv`, and
    /// `ffn_up` holding gate then up).
    Fused,
}

/// Which tensors a layer has besides the pre-norms, q/k/v, output and feed-forward matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LayerLayout {
    pub qkv: Storage,
    pub gate_up: Storage,
    /// `attn_q.bias`, `attn_k.bias`, `attn_v.bias` (Qwen 2).
    pub qkv_bias: bool,
    /// Per-head RMSNorm weights `attn_q_norm`, `attn_k_norm` (Gemma 3, Qwen 3).
    pub qk_norm: bool,
    /// `post_attention_norm` and `post_ffw_norm` (Gemma 3).
    pub post_norms: bool,
}

impl LayerLayout {
    pub const PLAIN: LayerLayout = LayerLayout {
        qkv: Storage::Separate,
        gate_up: Storage::Separate,
        qkv_bias: false,
        qk_norm: false,
        post_norms: false,
    };
}

/// One architecture. Implementations are unit structs in the registry.
pub(super) trait ArchitectureSpec: Sync {
    /// `general.architecture`, also the prefix of its metadata keys.
    fn name(&self) -> &'static str;

    /// Reads the architecture's own metadata and tensors into `config`, which holds the common
    /// hyperparameters and the defaults (plain RoPE at the file's base, 1/sqrt(head_dim)).
    fn configure(&self, _reader: &ConfigReader, _config: &mut ModelConfig) -> Result<(), ModelError> {
        Ok(())
    }

    /// `rope.scaling.type` values it handles beyond "none" and "linear" (common to all).
    fn rope_scaling_types(&self) -> &'static [&'static str] {
        &[]
    }

    fn layout(&self) -> LayerLayout;

    /// Multiplies the token embeddings.
    fn embedding_scale(&self, _config: &ModelConfig) -> f32 {
        1.0
    }

    /// How RoPE pairs the dimensions of the default layer's q and k.
    fn rope_style(&self) -> RopeStyle {
        RopeStyle::Neox
    }

    /// Records layer `index`; `lc.acts.normed` holds its attention pre-norm of the residual
    /// stream on entry and `next_norm` of the updated stream on exit. By default Llama's
    /// pre-norm layer, whose tensors (`layout`) and RoPE style vary by architecture.
    fn record_layer<'a>(
        &self,
        lc: &LayerContext<'a>,
        ops: &mut OpList,
        layer: &LayerInputs<'a>,
    ) -> Result<(), KernelError> {
        llama::record_pre_norm_layer(lc, ops, layer, self.rope_style())
    }
}

/// Every architecture the engine runs.
static REGISTRY: &[&dyn ArchitectureSpec] =
    &[&gemma3::Gemma3, &llama::Llama, &qwen2::Qwen2, &qwen3::Qwen3, &phi3::Phi3];

/// A supported architecture (a handle on its registry entry).
#[derive(Clone, Copy)]
pub struct Architecture(&'static dyn ArchitectureSpec);

impl Architecture {
    /// The architecture named `name` (`general.architecture`), or an error that lists the
    /// supported ones.
    pub fn from_name(name: &str) -> Result<Architecture, ModelError> {
        REGISTRY.iter().find(|spec| spec.name() == name).map(|&spec| Architecture(spec)).ok_or_else(|| {
            ModelError::UnsupportedArchitecture {
                name: name.to_string(),
                supported: Self::supported().join(", "),
            }
        })
    }

    /// The names of every supported architecture.
    pub fn supported() -> Vec<&'static str> {
        REGISTRY.iter().map(|spec| spec.name()).collect()
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub(super) fn spec(self) -> &'static dyn ArchitectureSpec {
        self.0
    }
}

impl PartialEq for Architecture {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Architecture {}

impl fmt::Debug for Architecture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Architecture {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_architectures_are_refused_with_the_supported_list() {
        let error = Architecture::from_name("mamba").unwrap_err().to_string();
        assert!(error.contains("'mamba'"), "{error}");
        for name in ["gemma3", "llama", "qwen2", "qwen3", "phi3"] {
            assert!(error.contains(name), "{error}");
            assert_eq!(Architecture::from_name(name).unwrap().name(), name);
        }
    }
}
