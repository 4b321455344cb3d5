//! A Hugging Face `config.json` read into the engine's metadata keys (llama.cpp's names), and
//! Hugging Face tensor names mapped to ours.

use doppler_engine::gguf::MetadataValue;
use serde_json::Value;

use super::ConvertError;

/// The architectures a safetensors folder converts from: `model_type` → ours.
const ARCHITECTURES: &[(&str, &str)] =
    &[("llama", "llama"), ("mistral", "llama"), ("qwen2", "qwen2"), ("qwen3", "qwen3")];

/// What the conversion needs from `config.json`.
#[derive(Debug, Clone)]
pub(crate) struct HfConfig {
    /// Ours: `llama`, `qwen2`, `qwen3`.
    pub architecture: &'static str,
    pub n_layers: u64,
    pub n_heads: u64,
    pub n_kv_heads: u64,
    pub tied_embeddings: bool,
    /// `<arch>.*` metadata entries.
    pub metadata: Vec<(String, MetadataValue)>,
}

impl HfConfig {
    pub(crate) fn parse(json: &Value) -> Result<HfConfig, ConvertError> {
        let model_type = json["model_type"].as_str().unwrap_or_default();
        let architecture =
            ARCHITECTURES.iter().find(|(hf, _)| *hf == model_type).map(|(_, ours)| *ours).ok_or_else(
                || ConvertError::UnsupportedArchitecture { model_type: model_type.to_string() },
            )?;
        let uint = |key: &'static str| -> Result<u64, ConvertError> {
            json[key].as_u64().ok_or(ConvertError::MissingConfig { key })
        };
        let n_heads = uint("num_attention_heads")?;
        let n_kv_heads = json["num_key_value_heads"].as_u64().unwrap_or(n_heads);
        let hidden = uint("hidden_size")?;
        let n_layers = uint("num_hidden_layers")?;
        let key = |name: &str| format!("{architecture}.{name}");
        let as_u32 = |key: &'static str, value: u64| {
            u32::try_from(value)
                .map_err(|_| ConvertError::InvalidConfig { key, reason: format!("{value} is too large") })
        };
        let mut metadata = vec![
            (key("block_count"), MetadataValue::U32(as_u32("num_hidden_layers", n_layers)?)),
            (key("embedding_length"), MetadataValue::U32(as_u32("hidden_size", hidden)?)),
            (
                key("feed_forward_length"),
                MetadataValue::U32(as_u32("intermediate_size", uint("intermediate_size")?)?),
            ),
            (key("attention.head_count"), MetadataValue::U32(as_u32("num_attention_heads", n_heads)?)),
            (key("attention.head_count_kv"), MetadataValue::U32(as_u32("num_key_value_heads", n_kv_heads)?)),
        ];
        if let Some(context) = json["max_position_embeddings"].as_u64() {
            metadata.push((
                key("context_length"),
                MetadataValue::U32(as_u32("max_position_embeddings", context)?),
            ));
        }
        if let Some(head_dim) = json["head_dim"].as_u64() {
            let head_dim = MetadataValue::U32(as_u32("head_dim", head_dim)?);
            metadata.push((key("attention.key_length"), head_dim.clone()));
            metadata.push((key("attention.value_length"), head_dim));
        }
        let float = |name: &str| json[name].as_f64().map(|v| MetadataValue::F32(v as f32));
        if let Some(theta) = float("rope_theta") {
            metadata.push((key("rope.freq_base"), theta));
        }
        if let Some(eps) = float("rms_norm_eps") {
            metadata.push((key("attention.layer_norm_rms_epsilon"), eps));
        }
        metadata.extend(rope_scaling(&json["rope_scaling"], architecture)?);
        Ok(HfConfig {
            architecture,
            n_layers,
            n_heads,
            n_kv_heads,
            tied_embeddings: json["tie_word_embeddings"].as_bool().unwrap_or(false),
            metadata,
        })
    }

    /// Llama's Q and K rows are stored permuted for interleaved RoPE (as llama.cpp's converter
    /// does); Qwen keeps transformers' half-split pairs.
    pub(crate) fn permuted_heads(&self, our_name: &str) -> Option<u64> {
        if self.architecture != "llama" {
            return None;
        }
        if our_name.ends_with(".attn_q.weight") {
            Some(self.n_heads)
        } else if our_name.ends_with(".attn_k.weight") {
            Some(self.n_kv_heads)
        } else {
            None
        }
    }
}

fn rope_scaling(scaling: &Value, architecture: &str) -> Result<Vec<(String, MetadataValue)>, ConvertError> {
    if scaling.is_null() {
        return Ok(Vec::new());
    }
    let kind = scaling["rope_type"].as_str().or(scaling["type"].as_str()).unwrap_or("default");
    let key = |name: &str| format!("{architecture}.rope.scaling.{name}");
    let float =
        |name: &str, default: f64| MetadataValue::F32(scaling[name].as_f64().unwrap_or(default) as f32);
    Ok(match kind {
        "default" => Vec::new(),
        "linear" => {
            vec![(key("type"), MetadataValue::String("linear".into())), (key("factor"), float("factor", 1.0))]
        }
        "llama3" if architecture == "llama" => vec![
            (key("type"), MetadataValue::String("llama3".into())),
            (key("factor"), float("factor", 8.0)),
            (key("low_freq_factor"), float("low_freq_factor", 1.0)),
            (key("high_freq_factor"), float("high_freq_factor", 4.0)),
            (
                key("original_context_length"),
                MetadataValue::U32(
                    scaling["original_max_position_embeddings"].as_u64().unwrap_or(8192) as u32
                ),
            ),
        ],
        other => {
            return Err(ConvertError::InvalidConfig {
                key: "rope_scaling",
                reason: format!("RoPE scaling '{other}' is not supported for {architecture}"),
            })
        }
    })
}

/// Our name for a Hugging Face tensor, `None` for tensors the engine does not use (rotary
/// caches some checkpoints carry).
pub(crate) fn our_tensor_name(hf_name: &str) -> Option<String> {
    let fixed = match hf_name {
        "model.embed_tokens.weight" => Some("token_embd.weight"),
        "model.norm.weight" => Some("output_norm.weight"),
        "lm_head.weight" => Some("output.weight"),
        _ => None,
    };
    if let Some(name) = fixed {
        return Some(name.to_string());
    }
    let rest = hf_name.strip_prefix("model.layers.")?;
    let (layer, part) = rest.split_once('.')?;
    let layer: u32 = layer.parse().ok()?;
    let (module, kind) = part.rsplit_once('.')?;
    let ours = match module {
        "input_layernorm" => "attn_norm",
        "post_attention_layernorm" => "ffn_norm",
        "self_attn.q_proj" => "attn_q",
        "self_attn.k_proj" => "attn_k",
        "self_attn.v_proj" => "attn_v",
        "self_attn.o_proj" => "attn_output",
        "self_attn.q_norm" => "attn_q_norm",
        "self_attn.k_norm" => "attn_k_norm",
        "mlp.gate_proj" => "ffn_gate",
        "mlp.up_proj" => "ffn_up",
        "mlp.down_proj" => "ffn_down",
        _ => return None,
    };
    matches!(kind, "weight" | "bias").then(|| format!("blk.{layer}.{ours}.{kind}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugging_face_names_map_to_ours() {
        assert_eq!(our_tensor_name("model.embed_tokens.weight").as_deref(), Some("token_embd.weight"));
        assert_eq!(
            our_tensor_name("model.layers.3.self_attn.q_proj.bias").as_deref(),
            Some("blk.3.attn_q.bias")
        );
        assert_eq!(
            our_tensor_name("model.layers.0.mlp.down_proj.weight").as_deref(),
            Some("blk.0.ffn_down.weight")
        );
        assert_eq!(our_tensor_name("model.layers.0.self_attn.rotary_emb.inv_freq"), None);
        assert_eq!(our_tensor_name("model.layers.x.mlp.up_proj.weight"), None);
    }

    #[test]
    fn an_unknown_model_type_or_rope_scaling_is_refused() {
        let error = HfConfig::parse(&serde_json::json!({"model_type": "gpt_neox"})).unwrap_err();
        assert!(error.to_string().contains("gpt_neox"), "{error}");
        let config = serde_json::json!({
            "model_type": "qwen2", "num_attention_heads": 4, "hidden_size": 64, "num_hidden_layers": 2,
            "intermediate_size": 128, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}
        });
        let error = HfConfig::parse(&config).unwrap_err();
        assert!(error.to_string().contains("yarn"), "{error}");
    }
}
