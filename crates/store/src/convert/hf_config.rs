//! A Hugging Face `config.json` read into the engine's metadata keys (llama.cpp's names), and
//! Hugging Face tensor names mapped to ours.

use doppler_engine::gguf::MetadataValue;
use serde_json::Value;

use super::ConvertError;

/// The architectures a safetensors folder converts from: `model_type` → ours. A multimodal
/// Gemma 3 (`gemma3`) converts its language model, described by its `text_config`.
const ARCHITECTURES: &[(&str, &str)] = &[
    ("llama", "llama"),
    ("mistral", "llama"),
    ("qwen2", "qwen2"),
    ("qwen3", "qwen3"),
    ("phi3", "phi3"),
    ("gemma3_text", "gemma3"),
    ("gemma3", "gemma3"),
];

/// transformers' `Gemma3TextConfig` defaults, which Hub configs (4B and up: their
/// `text_config`) leave out.
const GEMMA3_DEFAULTS: &[(&str, f64)] = &[
    ("hidden_size", 2304.0),
    ("intermediate_size", 9216.0),
    ("num_hidden_layers", 26.0),
    ("num_attention_heads", 8.0),
    ("num_key_value_heads", 4.0),
    ("head_dim", 256.0),
    ("max_position_embeddings", 131072.0),
    ("rms_norm_eps", 1e-6),
    ("rope_theta", 1_000_000.0),
    ("rope_local_base_freq", 10_000.0),
    ("sliding_window", 4096.0),
    ("query_pre_attn_scalar", 256.0),
];

/// Gemma 3's layers as the engine runs them: five sliding-window layers, then one global.
const GEMMA3_SLIDING_PATTERN: usize = 6;
/// Gemma 3 27B: the engine recognises it by its layers and scales queries by hidden/heads.
const GEMMA3_27B_LAYERS: u64 = 62;

/// How a tensor's values change on the way in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowTransform {
    None,
    /// Llama's Q and K rows, per head of this many, reordered for interleaved RoPE.
    PermuteHeads(u64),
    /// Gemma's RMSNorm scales by (1 + weight); GGUF stores the sum, as llama.cpp writes it.
    AddOne,
}

/// What the conversion needs from `config.json`.
#[derive(Debug, Clone)]
pub(crate) struct HfConfig {
    /// Ours: `llama`, `qwen2`, `qwen3`, `phi3`, `gemma3`.
    pub architecture: &'static str,
    pub n_layers: u64,
    pub n_heads: u64,
    pub n_kv_heads: u64,
    pub tied_embeddings: bool,
    /// `<arch>.*` metadata entries.
    pub metadata: Vec<(String, MetadataValue)>,
    /// F32 vectors the config defines and the engine reads as tensors (Phi 3's LongRoPE
    /// factors, `rope_factors_{long,short}.weight`).
    pub extra_tensors: Vec<(String, Vec<f32>)>,
}

impl HfConfig {
    pub(crate) fn parse(json: &Value) -> Result<HfConfig, ConvertError> {
        let model_type = json["model_type"].as_str().unwrap_or_default();
        let architecture =
            ARCHITECTURES.iter().find(|(hf, _)| *hf == model_type).map(|(_, ours)| *ours).ok_or_else(
                || ConvertError::UnsupportedArchitecture { model_type: model_type.to_string() },
            )?;
        // A multimodal Gemma 3's language model is described by its `text_config`.
        let mut json = match model_type {
            "gemma3" => {
                let mut text = json["text_config"].clone();
                if let (Some(fields), Some(tied)) = (text.as_object_mut(), json.get("tie_word_embeddings")) {
                    fields.entry("tie_word_embeddings").or_insert(tied.clone());
                }
                text
            }
            _ => json.clone(),
        };
        if !json.is_object() {
            return Err(ConvertError::MissingConfig { key: "text_config" });
        }
        with_rope_parameters(&mut json)?;
        if architecture == "gemma3" {
            with_gemma3_defaults(&mut json);
        }
        let json = &json;
        let uint = |key: &'static str| -> Result<u64, ConvertError> {
            json[key].as_u64().ok_or(ConvertError::MissingConfig { key })
        };
        let n_heads = uint("num_attention_heads")?;
        let n_kv_heads = json["num_key_value_heads"].as_u64().unwrap_or(n_heads);
        let hidden = uint("hidden_size")?;
        let n_layers = uint("num_hidden_layers")?;
        let key = |name: &str| format!("{architecture}.{name}");
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
        let mut extra_tensors = Vec::new();
        match architecture {
            "phi3" => {
                let head_dim = hidden / n_heads.max(1);
                let rope_dim =
                    (json["partial_rotary_factor"].as_f64().unwrap_or(1.0) * head_dim as f64) as u64;
                metadata
                    .push((key("rope.dimension_count"), MetadataValue::U32(as_u32("head_dim", rope_dim)?)));
                metadata.push((
                    key("attention.sliding_window"),
                    MetadataValue::U32(as_u32(
                        "sliding_window",
                        json["sliding_window"].as_u64().unwrap_or(0),
                    )?),
                ));
                let (entries, tensors) = long_rope(json, rope_dim)?;
                metadata.extend(entries);
                extra_tensors = tensors;
            }
            "gemma3" => {
                check_gemma3(json, n_layers, hidden, n_heads)?;
                metadata.push((
                    key("attention.sliding_window"),
                    MetadataValue::U32(as_u32("sliding_window", uint("sliding_window")?)?),
                ));
                if let Some(local_theta) = float("rope_local_base_freq") {
                    metadata.push((key("rope.freq_base_swa"), local_theta));
                }
                metadata.extend(rope_scaling(&json["rope_scaling"], architecture)?);
            }
            _ => metadata.extend(rope_scaling(&json["rope_scaling"], architecture)?),
        }
        let tied_default = architecture == "gemma3";
        Ok(HfConfig {
            architecture,
            n_layers,
            n_heads,
            n_kv_heads,
            tied_embeddings: json["tie_word_embeddings"].as_bool().unwrap_or(tied_default),
            metadata,
            extra_tensors,
        })
    }

    /// How `our_name`'s values are changed: Llama's Q and K rows are stored permuted for
    /// interleaved RoPE (as llama.cpp's converter does; the others keep transformers'
    /// half-split pairs), and Gemma's norm weights gain their +1.
    pub(crate) fn transform(&self, our_name: &str) -> RowTransform {
        match self.architecture {
            "llama" if our_name.ends_with(".attn_q.weight") => RowTransform::PermuteHeads(self.n_heads),
            "llama" if our_name.ends_with(".attn_k.weight") => RowTransform::PermuteHeads(self.n_kv_heads),
            "gemma3" if our_name.ends_with("norm.weight") => RowTransform::AddOne,
            _ => RowTransform::None,
        }
    }

    /// Our name for a Hugging Face tensor, `None` for tensors the engine does not use (rotary
    /// caches some checkpoints carry, a multimodal Gemma's vision tower).
    pub(crate) fn our_tensor_name(&self, hf_name: &str) -> Option<String> {
        // A multimodal Gemma 3 holds its language model under `language_model` (transformers
        // 4.50: `language_model.model.*`; later: `model.language_model.*`).
        let hf_name = match hf_name.strip_prefix("model.language_model.") {
            Some(rest) => format!("model.{rest}"),
            None => hf_name.strip_prefix("language_model.").unwrap_or(hf_name).to_string(),
        };
        let fixed = match hf_name.as_str() {
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
        let gemma = self.architecture == "gemma3";
        let ours = match module {
            "input_layernorm" => "attn_norm",
            // Gemma normalises after attention as well as before the feed-forward block.
            "post_attention_layernorm" if gemma => "post_attention_norm",
            "post_attention_layernorm" => "ffn_norm",
            "pre_feedforward_layernorm" => "ffn_norm",
            "post_feedforward_layernorm" => "post_ffw_norm",
            "self_attn.q_proj" => "attn_q",
            "self_attn.k_proj" => "attn_k",
            "self_attn.v_proj" => "attn_v",
            "self_attn.qkv_proj" => "attn_qkv",
            "self_attn.o_proj" => "attn_output",
            "self_attn.q_norm" => "attn_q_norm",
            "self_attn.k_norm" => "attn_k_norm",
            "mlp.gate_proj" => "ffn_gate",
            "mlp.up_proj" => "ffn_up",
            // Phi 3's gate and up rows in one matrix, gate first: the engine reads it so.
            "mlp.gate_up_proj" => "ffn_up",
            "mlp.down_proj" => "ffn_down",
            _ => return None,
        };
        matches!(kind, "weight" | "bias").then(|| format!("blk.{layer}.{ours}.{kind}"))
    }
}

fn as_u32(key: &'static str, value: u64) -> Result<u32, ConvertError> {
    u32::try_from(value)
        .map_err(|_| ConvertError::InvalidConfig { key, reason: format!("{value} is too large") })
}

/// transformers' defaults for what a Gemma 3 config leaves out.
fn with_gemma3_defaults(json: &mut Value) {
    let fields = json.as_object_mut().expect("checked to be an object");
    for &(key, default) in GEMMA3_DEFAULTS {
        let value = if default.fract() == 0.0 { Value::from(default as u64) } else { Value::from(default) };
        fields.entry(key).or_insert(value);
    }
}

/// transformers 5 writes RoPE settings as `rope_parameters` (one set, or one per attention
/// type as Gemma 3's `full_attention` and `sliding_attention`) where earlier configs, which
/// the rest of the conversion reads, had `rope_theta`, `rope_scaling` and Gemma 3's
/// `rope_local_base_freq`: those are filled in from it.
fn with_rope_parameters(json: &mut Value) -> Result<(), ConvertError> {
    let parameters = json["rope_parameters"].clone();
    if !parameters.is_object() {
        return Ok(());
    }
    let invalid = |reason: String| ConvertError::InvalidConfig { key: "rope_parameters", reason };
    let (global, local) = match (&parameters["full_attention"], &parameters["sliding_attention"]) {
        (Value::Null, Value::Null) => (parameters.clone(), Value::Null),
        (full, sliding) if full.is_object() => (full.clone(), sliding.clone()),
        _ => return Err(invalid("per-attention parameters without 'full_attention'".into())),
    };
    let fields = json.as_object_mut().expect("checked to be an object");
    if let Some(theta) = global.get("rope_theta") {
        fields.entry("rope_theta").or_insert(theta.clone());
    }
    for key in ["partial_rotary_factor", "original_max_position_embeddings"] {
        if let Some(value) = global.get(key) {
            fields.entry(key).or_insert(value.clone());
        }
    }
    if global["rope_type"].as_str().is_some_and(|kind| kind != "default") {
        fields.entry("rope_scaling").or_insert(global);
    }
    if local.is_object() {
        if local["rope_type"].as_str().is_some_and(|kind| kind != "default") {
            return Err(invalid("scaled RoPE on sliding-window layers is not supported".into()));
        }
        if let Some(theta) = local.get("rope_theta") {
            fields.entry("rope_local_base_freq").or_insert(theta.clone());
        }
    }
    Ok(())
}

/// What the engine assumes of every Gemma 3 and a config could say otherwise: the sliding
/// and global layers' pattern, the query scale and no logit soft-capping.
fn check_gemma3(json: &Value, n_layers: u64, hidden: u64, n_heads: u64) -> Result<(), ConvertError> {
    let invalid = |key: &'static str, reason: String| ConvertError::InvalidConfig { key, reason };
    if let Some(types) = json["layer_types"].as_array() {
        let engine_runs = |layer: usize| {
            if (layer + 1).is_multiple_of(GEMMA3_SLIDING_PATTERN) {
                "full_attention"
            } else {
                "sliding_attention"
            }
        };
        if types.len() as u64 != n_layers
            || types.iter().enumerate().any(|(layer, t)| t != engine_runs(layer))
        {
            return Err(invalid("layer_types", "not five sliding-window layers then one global".into()));
        }
    }
    if let Some(pattern) = json["sliding_window_pattern"].as_u64() {
        if pattern != GEMMA3_SLIDING_PATTERN as u64 {
            return Err(invalid("sliding_window_pattern", format!("{pattern}; the engine runs 6")));
        }
    }
    let head_dim = json["head_dim"].as_u64().unwrap_or(hidden / n_heads.max(1));
    let scalar = json["query_pre_attn_scalar"].as_f64().unwrap_or(head_dim as f64);
    let engine_scalar =
        if n_layers == GEMMA3_27B_LAYERS { hidden as f64 / n_heads.max(1) as f64 } else { head_dim as f64 };
    if scalar != engine_scalar {
        return Err(invalid(
            "query_pre_attn_scalar",
            format!("{scalar}; the engine scales by {engine_scalar}"),
        ));
    }
    for key in ["final_logit_softcapping", "attn_logit_softcapping"] {
        if !json[key].is_null() {
            return Err(invalid(key, "logit soft-capping is not supported for gemma3".into()));
        }
    }
    Ok(())
}

/// Phi 3's LongRoPE, as llama.cpp writes it: the original context, the attention factor
/// (the config's, or transformers' sqrt(1 + ln s / ln original) for a context s times the
/// original) and the per-pair frequency divisors as two F32 tensors.
#[allow(clippy::type_complexity)]
fn long_rope(
    json: &Value,
    rope_dim: u64,
) -> Result<(Vec<(String, MetadataValue)>, Vec<(String, Vec<f32>)>), ConvertError> {
    let mut entries = Vec::new();
    let original = json["original_max_position_embeddings"].as_u64();
    if let Some(original) = original {
        entries.push((
            "phi3.rope.scaling.original_context_length".to_string(),
            MetadataValue::U32(as_u32("original_max_position_embeddings", original)?),
        ));
    }
    let scaling = &json["rope_scaling"];
    if scaling.is_null() {
        return Ok((entries, Vec::new()));
    }
    let invalid = |reason: String| ConvertError::InvalidConfig { key: "rope_scaling", reason };
    let kind = scaling["rope_type"].as_str().or(scaling["type"].as_str()).unwrap_or_default();
    if !matches!(kind, "longrope" | "su") {
        return Err(invalid(format!("RoPE scaling '{kind}' is not supported for phi3")));
    }
    let original = original.ok_or(ConvertError::MissingConfig { key: "original_max_position_embeddings" })?;
    let context = json["max_position_embeddings"].as_u64().unwrap_or(original);
    let attention_factor = match scaling["attention_factor"].as_f64() {
        Some(factor) => factor,
        None if context > original && original > 1 => {
            let scale = context as f64 / original as f64;
            (1.0 + scale.ln() / (original as f64).ln()).sqrt()
        }
        None => 1.0,
    };
    entries.push(("phi3.rope.scaling.attn_factor".to_string(), MetadataValue::F32(attention_factor as f32)));
    let mut tensors = Vec::new();
    for (which, name) in
        [("long_factor", "rope_factors_long.weight"), ("short_factor", "rope_factors_short.weight")]
    {
        let factors: Option<Vec<f32>> = scaling[which]
            .as_array()
            .and_then(|values| values.iter().map(|v| v.as_f64().map(|v| v as f32)).collect());
        match factors {
            Some(factors) if factors.len() as u64 * 2 == rope_dim => {
                tensors.push((name.to_string(), factors))
            }
            _ => {
                return Err(invalid(format!(
                    "'{which}' is not {} numbers (half the rotary width)",
                    rope_dim / 2
                )))
            }
        }
    }
    Ok((entries, tensors))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(model_type: &str) -> HfConfig {
        HfConfig::parse(&serde_json::json!({
            "model_type": model_type, "num_attention_heads": 4, "hidden_size": 64, "num_hidden_layers": 6,
            "intermediate_size": 128, "head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 512
        }))
        .unwrap()
    }

    #[test]
    fn hugging_face_names_map_to_ours() {
        let llama = config("llama");
        let our_tensor_name = |name: &str| llama.our_tensor_name(name);
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
    fn gemma_names_its_norms_and_a_multimodal_gemma_converts_its_language_model() {
        let gemma = config("gemma3_text");
        assert!(gemma.tied_embeddings, "Gemma 3 ties its head by default");
        for (hf, ours) in [
            ("model.layers.2.post_attention_layernorm.weight", Some("blk.2.post_attention_norm.weight")),
            ("model.layers.2.pre_feedforward_layernorm.weight", Some("blk.2.ffn_norm.weight")),
            ("language_model.model.layers.1.self_attn.q_norm.weight", Some("blk.1.attn_q_norm.weight")),
            ("model.language_model.embed_tokens.weight", Some("token_embd.weight")),
            ("model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", None),
        ] {
            assert_eq!(gemma.our_tensor_name(hf).as_deref(), ours, "{hf}");
        }
        assert_eq!(gemma.transform("blk.1.attn_q_norm.weight"), RowTransform::AddOne);
        assert_eq!(gemma.transform("blk.1.attn_q.weight"), RowTransform::None);
        assert_eq!(config("llama").transform("blk.1.attn_k.weight"), RowTransform::PermuteHeads(4));

        let multimodal = HfConfig::parse(&serde_json::json!({
            "model_type": "gemma3",
            "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                            "num_hidden_layers": 34, "sliding_window": 1024,
                            "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
        }))
        .unwrap();
        let value = |key: &str| multimodal.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(
            value("gemma3.attention.head_count"),
            Some(MetadataValue::U32(8)),
            "transformers' default"
        );
        assert_eq!(value("gemma3.attention.key_length"), Some(MetadataValue::U32(256)));
        assert_eq!(value("gemma3.attention.sliding_window"), Some(MetadataValue::U32(1024)));
        assert_eq!(value("gemma3.rope.scaling.factor"), Some(MetadataValue::F32(8.0)));
    }

    #[test]
    fn a_gemma_the_engine_would_run_differently_is_refused() {
        let base = serde_json::json!({
            "model_type": "gemma3_text", "num_attention_heads": 4, "hidden_size": 64, "num_hidden_layers": 6,
            "intermediate_size": 128, "head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 512
        });
        HfConfig::parse(&base).unwrap();
        for (key, value) in [
            ("query_pre_attn_scalar", serde_json::json!(64)),
            ("sliding_window_pattern", serde_json::json!(4)),
            ("final_logit_softcapping", serde_json::json!(30.0)),
            ("layer_types", serde_json::json!(vec!["full_attention"; 6])),
        ] {
            let mut config = base.clone();
            config[key] = value;
            let error = HfConfig::parse(&config).unwrap_err();
            assert!(error.to_string().contains(key), "{error}");
        }
    }

    #[test]
    fn transformers_5_rope_parameters_read_as_the_older_keys() {
        let gemma = HfConfig::parse(&serde_json::json!({
            "model_type": "gemma3_text", "num_attention_heads": 4, "hidden_size": 128, "num_hidden_layers": 6,
            "intermediate_size": 256, "head_dim": 64, "query_pre_attn_scalar": 64, "sliding_window": 512,
            "rope_parameters": {
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}}
        }))
        .unwrap();
        let value = |key: &str| gemma.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(value("gemma3.rope.freq_base"), Some(MetadataValue::F32(1e6)));
        assert_eq!(value("gemma3.rope.freq_base_swa"), Some(MetadataValue::F32(20000.0)));
        assert_eq!(value("gemma3.rope.scaling.factor"), Some(MetadataValue::F32(8.0)));

        let (long, short) = (vec![2.0; 12], vec![1.0; 12]);
        let phi3 = HfConfig::parse(&serde_json::json!({
            "model_type": "phi3", "num_attention_heads": 4, "hidden_size": 128, "num_hidden_layers": 2,
            "intermediate_size": 384, "max_position_embeddings": 8192,
            "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                                "original_max_position_embeddings": 2048,
                                "long_factor": long, "short_factor": short}
        }))
        .unwrap();
        let value = |key: &str| phi3.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(value("phi3.rope.freq_base"), Some(MetadataValue::F32(10000.0)));
        assert_eq!(value("phi3.rope.dimension_count"), Some(MetadataValue::U32(24)));
        assert_eq!(value("phi3.rope.scaling.original_context_length"), Some(MetadataValue::U32(2048)));
        assert_eq!(phi3.extra_tensors.len(), 2);
    }

    #[test]
    fn phi3_long_rope_becomes_factor_tensors_and_an_attention_factor() {
        let (long, short) = (vec![2.0; 12], vec![1.0; 12]);
        let config = HfConfig::parse(&serde_json::json!({
            "model_type": "phi3", "num_attention_heads": 4, "hidden_size": 128, "num_hidden_layers": 2,
            "intermediate_size": 384, "partial_rotary_factor": 0.75, "max_position_embeddings": 8192,
            "original_max_position_embeddings": 2048,
            "rope_scaling": {"type": "longrope", "long_factor": long, "short_factor": short}
        }))
        .unwrap();
        let value = |key: &str| config.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(value("phi3.rope.dimension_count"), Some(MetadataValue::U32(24)));
        let Some(MetadataValue::F32(factor)) = value("phi3.rope.scaling.attn_factor") else { panic!() };
        // sqrt(1 + ln 4 / ln 2048), what llama.cpp wrote into the phi3 fixture.
        assert!((factor - 1.087_114_5).abs() < 1e-6, "{factor}");
        let names: Vec<&str> = config.extra_tensors.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["rope_factors_long.weight", "rope_factors_short.weight"]);
        assert_eq!(
            config.our_tensor_name("model.layers.1.mlp.gate_up_proj.weight").as_deref(),
            Some("blk.1.ffn_up.weight")
        );
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
