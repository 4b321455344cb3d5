use serde::Serialize;

use super::ModelError;
use crate::{
    gguf::{GgmlType, GgufFile, TensorInfo},
    kernels::matmul::SUPPORTED_TYPES,
};

/// The architectures the engine runs; anything else is refused at load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    Gemma3,
    /// Llama-family: Llama 2/3.x, SmolLM2.
    Llama,
}

impl Architecture {
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Gemma3 => "gemma3",
            Architecture::Llama => "llama",
        }
    }
}

/// Hyperparameters read from GGUF metadata and checked against the tensors.
#[derive(Debug, Clone, Serialize)]
pub struct ModelConfig {
    pub architecture: Architecture,
    pub n_layers: u32,
    pub hidden: u32,
    pub ffn_hidden: u32,
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub rope_dim: u32,
    pub vocab_size: u32,
    pub rms_eps: f32,
    /// RoPE base of full-attention layers.
    pub rope_theta: f32,
    /// RoPE base of sliding-window layers (Gemma 3: 10,000).
    pub rope_theta_local: f32,
    /// Linear RoPE scaling of full-attention layers (positions divided by this).
    pub rope_scale: f32,
    /// 0 when every layer attends to the whole context.
    pub sliding_window: u32,
    pub train_context: u32,
    pub tied_embeddings: bool,
}

impl ModelConfig {
    /// Whether layer `index` uses the sliding window (Gemma 3: five local layers, then one global).
    pub fn is_sliding_layer(&self, index: u32) -> bool {
        self.architecture == Architecture::Gemma3 && self.sliding_window > 0 && !(index + 1).is_multiple_of(6)
    }

    /// Derives the configuration from metadata and cross-checks it against the tensor table.
    pub fn from_gguf(gguf: &GgufFile) -> Result<ModelConfig, ModelError> {
        let arch_name = gguf.architecture()?;
        let architecture = match arch_name {
            "gemma3" => Architecture::Gemma3,
            "llama" => Architecture::Llama,
            other => return Err(ModelError::UnsupportedArchitecture(other.to_string())),
        };
        let meta = gguf.metadata();
        let key = |name: &str| format!("{arch_name}.{name}");
        let required_u32 = |name: &str| -> Result<u32, ModelError> {
            meta.get_u32(&key(name))?.ok_or_else(|| ModelError::MissingMetadata(key(name)))
        };
        let hidden = required_u32("embedding_length")?;
        let n_layers = required_u32("block_count")?;
        let ffn_hidden = required_u32("feed_forward_length")?;
        let n_heads = required_u32("attention.head_count")?;
        let n_kv_heads = meta.get_u32(&key("attention.head_count_kv"))?.unwrap_or(n_heads);
        if hidden == 0
            || n_layers == 0
            || ffn_hidden == 0
            || n_heads == 0
            || n_kv_heads == 0
            || n_heads % n_kv_heads != 0
        {
            return Err(ModelError::InvalidConfig(format!(
                "hidden {hidden}, layers {n_layers}, ffn {ffn_hidden}, heads {n_heads}, kv heads {n_kv_heads}: all must be positive and heads a multiple of kv heads"
            )));
        }
        let head_dim = match meta.get_u32(&key("attention.key_length"))? {
            Some(dim) => dim,
            None if hidden % n_heads == 0 => hidden / n_heads,
            None => {
                return Err(ModelError::InvalidConfig(format!(
                    "hidden {hidden} is not a multiple of {n_heads} heads"
                )))
            }
        };
        if let Some(value_dim) = meta.get_u32(&key("attention.value_length"))? {
            if value_dim != head_dim {
                return Err(ModelError::InvalidConfig(format!(
                    "key length {head_dim} differs from value length {value_dim}"
                )));
            }
        }
        let rope_dim = meta.get_u32(&key("rope.dimension_count"))?.unwrap_or(head_dim);
        if rope_dim == 0 || rope_dim > head_dim || rope_dim % 2 != 0 || head_dim > 512 {
            return Err(ModelError::InvalidConfig(format!(
                "rope dimension {rope_dim} with head dimension {head_dim}"
            )));
        }
        let vocab_size = match gguf.metadata().get_str_array("tokenizer.ggml.tokens")? {
            Some(tokens) => tokens.len() as u32,
            None => required_u32("vocab_size")?,
        };
        let default_theta = if architecture == Architecture::Gemma3 { 1_000_000.0 } else { 10_000.0 };
        let rope_scale = match meta.get_str(&key("rope.scaling.type"))? {
            Some("linear") => meta.get_f32(&key("rope.scaling.factor"))?.unwrap_or(1.0),
            Some("none") | None => 1.0,
            Some(other) => {
                return Err(ModelError::InvalidConfig(format!("rope scaling '{other}' is not supported")))
            }
        };
        let sliding_window = match architecture {
            Architecture::Gemma3 => meta.get_u32(&key("attention.sliding_window"))?.unwrap_or(0),
            Architecture::Llama => 0,
        };
        let config = ModelConfig {
            architecture,
            n_layers,
            hidden,
            ffn_hidden,
            n_heads,
            n_kv_heads,
            head_dim,
            rope_dim,
            vocab_size,
            rms_eps: meta.get_f32(&key("attention.layer_norm_rms_epsilon"))?.unwrap_or(1e-6),
            rope_theta: meta.get_f32(&key("rope.freq_base"))?.unwrap_or(default_theta),
            rope_theta_local: 10_000.0,
            rope_scale: if rope_scale > 0.0 { rope_scale } else { 1.0 },
            sliding_window,
            train_context: meta.get_u32(&key("context_length"))?.unwrap_or(4096),
            tied_embeddings: gguf.tensor("output.weight").is_none(),
        };
        config.check_tensors(gguf)?;
        Ok(config)
    }

    /// Every tensor the architecture needs, with the shape (GGUF order) it must have.
    pub fn expected_tensors(&self) -> Vec<(String, Vec<u64>)> {
        let (h, ff, hd) = (u64::from(self.hidden), u64::from(self.ffn_hidden), u64::from(self.head_dim));
        let q_dim = u64::from(self.n_heads) * hd;
        let kv_dim = u64::from(self.n_kv_heads) * hd;
        let mut tensors = vec![
            ("token_embd.weight".to_string(), vec![h, u64::from(self.vocab_size)]),
            ("output_norm.weight".to_string(), vec![h]),
        ];
        if !self.tied_embeddings {
            tensors.push(("output.weight".to_string(), vec![h, u64::from(self.vocab_size)]));
        }
        for layer in 0..self.n_layers {
            let name = |suffix: &str| format!("blk.{layer}.{suffix}.weight");
            tensors.extend([
                (name("attn_norm"), vec![h]),
                (name("attn_q"), vec![h, q_dim]),
                (name("attn_k"), vec![h, kv_dim]),
                (name("attn_v"), vec![h, kv_dim]),
                (name("attn_output"), vec![q_dim, h]),
                (name("ffn_norm"), vec![h]),
                (name("ffn_gate"), vec![h, ff]),
                (name("ffn_up"), vec![h, ff]),
                (name("ffn_down"), vec![ff, h]),
            ]);
            if self.architecture == Architecture::Gemma3 {
                tensors.extend([
                    (name("attn_q_norm"), vec![hd]),
                    (name("attn_k_norm"), vec![hd]),
                    (name("post_attention_norm"), vec![h]),
                    (name("post_ffw_norm"), vec![h]),
                ]);
            }
        }
        tensors
    }

    fn check_tensors(&self, gguf: &GgufFile) -> Result<(), ModelError> {
        for (name, shape) in self.expected_tensors() {
            let info = gguf.tensor(&name).ok_or_else(|| ModelError::MissingTensor(name.clone()))?;
            if info.dims != shape {
                return Err(ModelError::TensorShape { name, expected: shape, found: info.dims.clone() });
            }
            check_weight_type(info)?;
        }
        Ok(())
    }
}

fn check_weight_type(info: &TensorInfo) -> Result<(), ModelError> {
    let is_norm = info.dims.len() == 1;
    if (is_norm && info.ggml_type != GgmlType::F32) || !SUPPORTED_TYPES.contains(&info.ggml_type) {
        return Err(ModelError::UnsupportedTensorType { name: info.name.clone(), ty: info.ggml_type.name() });
    }
    Ok(())
}
