use serde::Serialize;

use super::{
    arch::{Architecture, LayerLayout, Storage},
    ModelError,
};
use crate::{
    gguf::{GgmlType, GgufFile, TensorInfo},
    kernels::{matmul::SUPPORTED_TYPES, rope::RopeFrequencies},
};

use super::limits;

/// LongRoPE (Phi 3): frequencies for contexts longer than the original training context.
#[derive(Debug, Clone, Serialize)]
pub struct LongRope {
    pub original_context: u32,
    pub frequencies: RopeFrequencies,
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
    /// RoPE of full-attention layers.
    pub rope: RopeFrequencies,
    /// Replaces `rope` when a session's context exceeds its original context (Phi 3).
    pub rope_long: Option<LongRope>,
    /// RoPE of sliding-window layers where it differs (Gemma 3: base 10,000, no scaling).
    pub rope_local: Option<RopeFrequencies>,
    /// 0 when every layer attends to the whole context.
    pub sliding_window: u32,
    /// With a sliding window: every `sliding_window_pattern`th layer (counting from 1)
    /// attends to the whole context, the others to the window (Gemma 3: 6).
    pub sliding_window_pattern: u32,
    /// Multiplies q·k before the softmax.
    pub attention_scale: f32,
    pub train_context: u32,
    pub tied_embeddings: bool,
}

/// Metadata and tensor reads of one architecture's file: keys are `{architecture}.{name}`.
pub struct ConfigReader<'a> {
    pub gguf: &'a GgufFile,
    pub arch: &'a str,
}

impl ConfigReader<'_> {
    pub fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.arch)
    }

    pub fn u32(&self, name: &str) -> Result<Option<u32>, ModelError> {
        Ok(self.gguf.metadata().get_u32(&self.key(name))?)
    }

    /// A u32 that must not exceed `limit`; an over-limit value is refused naming the key.
    pub fn bounded_u32(&self, name: &str, limit: u32) -> Result<Option<u32>, ModelError> {
        let key = self.key(name);
        match self.gguf.metadata().get_u64(&key)? {
            Some(value) if value > u64::from(limit) => {
                Err(ModelError::OverLimit { key, value, limit: u64::from(limit) })
            }
            // value <= limit, a u32.
            value => Ok(value.map(|v| v as u32)),
        }
    }

    pub fn required_bounded_u32(&self, name: &str, limit: u32) -> Result<u32, ModelError> {
        self.bounded_u32(name, limit)?.ok_or_else(|| ModelError::MissingMetadata(self.key(name)))
    }

    /// A finite f32, so NaN or infinite hyperparameters never reach the kernels.
    pub fn finite_f32(&self, name: &str) -> Result<Option<f32>, ModelError> {
        match self.f32(name)? {
            Some(value) if !value.is_finite() => {
                Err(ModelError::InvalidConfig(format!("metadata key '{}' is {value}", self.key(name))))
            }
            value => Ok(value),
        }
    }

    pub fn f32(&self, name: &str) -> Result<Option<f32>, ModelError> {
        Ok(self.gguf.metadata().get_f32(&self.key(name))?)
    }

    pub fn str(&self, name: &str) -> Result<Option<&str>, ModelError> {
        Ok(self.gguf.metadata().get_str(&self.key(name))?)
    }

    /// An f32 vector tensor of exactly `len` values, if the file has one named `name`.
    pub fn f32_tensor(&self, name: &str, len: usize) -> Result<Option<Vec<f32>>, ModelError> {
        let Some(info) = self.gguf.tensor(name) else { return Ok(None) };
        if info.ggml_type != GgmlType::F32 || info.dims != [len as u64] {
            return Err(ModelError::TensorShape {
                name: name.to_string(),
                expected: vec![len as u64],
                found: info.dims.clone(),
            });
        }
        let values = self
            .gguf
            .tensor_data(info)
            .chunks_exact(4)
            .map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
            .collect::<Vec<_>>();
        if values.len() != len || values.iter().any(|v| !v.is_finite() || *v <= 0.0) {
            return Err(ModelError::InvalidConfig(format!(
                "tensor '{name}' must hold {len} positive values"
            )));
        }
        Ok(Some(values))
    }
}

/// A session's context when none is asked for: the model's training context, at most this.
const DEFAULT_CONTEXT_CAP: u32 = 8192;

impl ModelConfig {
    /// The context a session holds when none is asked for: the training context, at most
    /// `DEFAULT_CONTEXT_CAP`. One rule for the engine's loads and the app's settings.
    pub fn default_context(&self) -> u32 {
        self.train_context.clamp(1, limits::MAX_CONTEXT).min(DEFAULT_CONTEXT_CAP)
    }

    /// Whether layer `index` attends to the sliding window rather than the whole context.
    pub fn is_sliding_layer(&self, index: u32) -> bool {
        self.sliding_window > 0
            && self.sliding_window_pattern > 0
            && !(index + 1).is_multiple_of(self.sliding_window_pattern)
    }

    /// Key/value slots layer `index` keeps in a session of `context_len` tokens: a sliding
    /// layer only its window and the prefill step that writes before it reads.
    pub fn kv_cache_len(&self, index: u32, context_len: u32, max_batch: u32) -> u32 {
        match self.is_sliding_layer(index) {
            true => context_len.min(self.sliding_window.saturating_add(max_batch)),
            false => context_len,
        }
    }

    /// The RoPE of full-attention layers in a session of `context_len` tokens.
    pub fn rope_for_context(&self, context_len: u32) -> &RopeFrequencies {
        match &self.rope_long {
            Some(long) if context_len > long.original_context => &long.frequencies,
            _ => &self.rope,
        }
    }

    /// Derives the configuration from metadata and cross-checks it against the tensor table.
    pub fn from_gguf(gguf: &GgufFile) -> Result<ModelConfig, ModelError> {
        let architecture = Architecture::from_name(gguf.architecture()?)?;
        let reader = ConfigReader { gguf, arch: architecture.name() };
        let hidden = reader.required_bounded_u32("embedding_length", limits::MAX_EMBEDDING)?;
        let n_layers = reader.required_bounded_u32("block_count", limits::MAX_LAYERS)?;
        let ffn_hidden = reader.required_bounded_u32("feed_forward_length", limits::MAX_FEED_FORWARD)?;
        let n_heads = reader.required_bounded_u32("attention.head_count", limits::MAX_HEADS)?;
        let n_kv_heads = reader.bounded_u32("attention.head_count_kv", limits::MAX_HEADS)?.unwrap_or(n_heads);
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
        let head_dim = match reader.bounded_u32("attention.key_length", limits::MAX_HEAD_DIM)? {
            Some(dim) => dim,
            None if hidden % n_heads == 0 => hidden / n_heads,
            None => {
                return Err(ModelError::InvalidConfig(format!(
                    "hidden {hidden} is not a multiple of {n_heads} heads"
                )))
            }
        };
        if let Some(value_dim) = reader.u32("attention.value_length")? {
            if value_dim != head_dim {
                return Err(ModelError::InvalidConfig(format!(
                    "key length {head_dim} differs from value length {value_dim}"
                )));
            }
        }
        let rope_dim = reader.u32("rope.dimension_count")?.unwrap_or(head_dim);
        if rope_dim == 0
            || rope_dim > head_dim
            || rope_dim % 2 != 0
            || head_dim == 0
            || head_dim > limits::MAX_HEAD_DIM
        {
            return Err(ModelError::InvalidConfig(format!(
                "rope dimension {rope_dim} with head dimension {head_dim}"
            )));
        }
        let vocab_size = match gguf.metadata().get_string_array("tokenizer.ggml.tokens")? {
            Some(tokens) if tokens.len() as u64 > u64::from(limits::MAX_VOCAB) => {
                return Err(ModelError::OverLimit {
                    key: "tokenizer.ggml.tokens".to_string(),
                    value: tokens.len() as u64,
                    limit: u64::from(limits::MAX_VOCAB),
                })
            }
            Some(tokens) => tokens.len() as u32,
            None => reader.required_bounded_u32("vocab_size", limits::MAX_VOCAB)?,
        };
        let train_context = reader.bounded_u32("context_length", limits::MAX_CONTEXT)?.unwrap_or(4096);
        let mut rope = RopeFrequencies::plain(reader.finite_f32("rope.freq_base")?.unwrap_or(10_000.0));
        if reader.str("rope.scaling.type")? == Some("linear") {
            let factor = reader.finite_f32("rope.scaling.factor")?.unwrap_or(1.0);
            rope.linear_scale = if factor > 0.0 { factor } else { 1.0 };
        }
        let mut config = ModelConfig {
            architecture,
            n_layers,
            hidden,
            ffn_hidden,
            n_heads,
            n_kv_heads,
            head_dim,
            rope_dim,
            vocab_size,
            rms_eps: reader.finite_f32("attention.layer_norm_rms_epsilon")?.unwrap_or(1e-6),
            rope,
            rope_long: None,
            rope_local: None,
            sliding_window: 0,
            sliding_window_pattern: 0,
            attention_scale: 1.0 / (head_dim as f32).sqrt(),
            train_context,
            tied_embeddings: gguf.tensor("output.weight").is_none(),
        };
        architecture.spec().configure(&reader, &mut config)?;
        let scaling = reader.str("rope.scaling.type")?;
        if let Some(other) = scaling.filter(|&s| {
            !["none", "linear"].contains(&s) && !architecture.spec().rope_scaling_types().contains(&s)
        }) {
            return Err(ModelError::InvalidConfig(format!(
                "rope scaling '{other}' is not supported for {}",
                architecture.name()
            )));
        }
        config.check_tensors(gguf)?;
        Ok(config)
    }

    pub(super) fn layout(&self) -> LayerLayout {
        self.architecture.spec().layout()
    }

    /// Every tensor the architecture needs, with the shape (GGUF order) it must have.
    pub fn expected_tensors(&self) -> Vec<(String, Vec<u64>)> {
        let (h, ff, hd) = (u64::from(self.hidden), u64::from(self.ffn_hidden), u64::from(self.head_dim));
        let q_dim = u64::from(self.n_heads) * hd;
        let kv_dim = u64::from(self.n_kv_heads) * hd;
        let layout = self.layout();
        let mut tensors = vec![
            ("token_embd.weight".to_string(), vec![h, u64::from(self.vocab_size)]),
            ("output_norm.weight".to_string(), vec![h]),
        ];
        if !self.tied_embeddings {
            tensors.push(("output.weight".to_string(), vec![h, u64::from(self.vocab_size)]));
        }
        for layer in 0..self.n_layers {
            let name = |suffix: &str| format!("blk.{layer}.{suffix}.weight");
            let bias = |suffix: &str| format!("blk.{layer}.{suffix}.bias");
            tensors.push((name("attn_norm"), vec![h]));
            match layout.qkv {
                Storage::Separate => tensors.extend([
                    (name("attn_q"), vec![h, q_dim]),
                    (name("attn_k"), vec![h, kv_dim]),
                    (name("attn_v"), vec![h, kv_dim]),
                ]),
                Storage::Fused => tensors.push((name("attn_qkv"), vec![h, q_dim + 2 * kv_dim])),
            }
            if layout.qkv_bias {
                tensors.extend([
                    (bias("attn_q"), vec![q_dim]),
                    (bias("attn_k"), vec![kv_dim]),
                    (bias("attn_v"), vec![kv_dim]),
                ]);
            }
            if layout.qk_norm {
                tensors.extend([(name("attn_q_norm"), vec![hd]), (name("attn_k_norm"), vec![hd])]);
            }
            tensors.extend([(name("attn_output"), vec![q_dim, h]), (name("ffn_norm"), vec![h])]);
            match layout.gate_up {
                Storage::Separate => {
                    tensors.extend([(name("ffn_gate"), vec![h, ff]), (name("ffn_up"), vec![h, ff])])
                }
                Storage::Fused => tensors.push((name("ffn_up"), vec![h, 2 * ff])),
            }
            tensors.push((name("ffn_down"), vec![ff, h]));
            if layout.post_norms {
                tensors.extend([(name("post_attention_norm"), vec![h]), (name("post_ffw_norm"), vec![h])]);
            }
        }
        tensors
    }

    fn check_tensors(&self, gguf: &GgufFile) -> Result<(), ModelError> {
        let last_layer = format!("blk.{}.", self.n_layers - 1);
        if !gguf.tensors().iter().any(|t| t.name.starts_with(&last_layer)) {
            return Err(ModelError::LayerCount {
                key: format!("{}.block_count", self.architecture.name()),
                claimed: self.n_layers,
            });
        }
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
    let is_vector = info.dims.len() == 1;
    if (is_vector && info.ggml_type != GgmlType::F32) || !SUPPORTED_TYPES.contains(&info.ggml_type) {
        return Err(ModelError::UnsupportedTensorType { name: info.name.clone(), ty: info.ggml_type.name() });
    }
    Ok(())
}
