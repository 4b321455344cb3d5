//! A tiny GGUF fixture written back out as a Hugging Face model folder would hold it, for
//! the tests of conversion from safetensors (folders and Hub repositories).

use std::path::Path;

use doppler_engine::gguf::GgufFile;

/// The GGUF's tensor name → Hugging Face's for `arch` (the converter's mapping read backwards).
fn hf_name(arch: &str, ours: &str) -> String {
    match ours {
        "token_embd.weight" => return "model.embed_tokens.weight".into(),
        "output_norm.weight" => return "model.norm.weight".into(),
        "output.weight" => return "lm_head.weight".into(),
        _ => {}
    }
    let rest = ours.strip_prefix("blk.").unwrap();
    let (layer, rest) = rest.split_once('.').unwrap();
    let (module, kind) = rest.rsplit_once('.').unwrap();
    let module = match (arch, module) {
        ("gemma3", "post_attention_norm") => "post_attention_layernorm",
        ("gemma3", "ffn_norm") => "pre_feedforward_layernorm",
        ("gemma3", "post_ffw_norm") => "post_feedforward_layernorm",
        ("phi3", "attn_qkv") => "self_attn.qkv_proj",
        ("phi3", "ffn_up") => "mlp.gate_up_proj",
        (_, module) => hf_module(module),
    };
    format!("model.layers.{layer}.{module}.{kind}")
}

fn hf_module(ours: &str) -> &'static str {
    match ours {
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        other => panic!("no Hugging Face name for {other}"),
    }
}

/// The fixtures whose tokenizer files are used as committed (`tools/hf_fixtures/tokenizers`,
/// those the fixture was made from) rather than rebuilt from the GGUF's vocabulary: a
/// SentencePiece vocabulary's scores and an o200k regex do not lead back to tokenizer.json.
const COMMITTED_TOKENIZERS: [&str; 3] = ["mistral", "gemma3", "phi3"];

/// Phi 3's LongRoPE tensors, which transformers' config holds instead.
const ROPE_FACTOR_TENSORS: [&str; 2] = ["rope_factors_long.weight", "rope_factors_short.weight"];

/// The word regexes of the tokenizer.json files of Llama 3 and Qwen 2.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The `rope_scaling` of transformers' config behind a GGUF that llama.cpp wrote with only the
/// frequency divisors (`rope_freqs.weight`, as it does for Llama 3.1): the Llama 3.1 or 3.2
/// parameters that give exactly those divisors. A fixture with other divisors is not written
/// back wrong, it panics.
fn llama3_scaling_of_rope_freqs(gguf: &GgufFile, key: &dyn Fn(&str) -> String) -> Option<serde_json::Value> {
    use doppler_engine::{model::Llama3Scaling, quant::dequantize};
    let info = gguf.tensor("rope_freqs.weight")?;
    let divisors = dequantize(info.ggml_type, &gguf.tensor_data(info)).unwrap();
    let theta = gguf.metadata().get_f32(&key("rope.freq_base")).unwrap().unwrap();
    let rope_dim = divisors.len() as u32 * 2;
    let (low_freq_factor, high_freq_factor, original_context) = (1.0, 4.0, 8192);
    let factor = [8.0, 32.0].into_iter().find(|&factor| {
        let scaling = Llama3Scaling { factor, low_freq_factor, high_freq_factor, original_context };
        let expected = scaling.divisors(theta, rope_dim).unwrap();
        expected.iter().zip(&divisors).all(|(a, b)| (a - b).abs() <= 1e-4 * a.abs())
    });
    let factor = factor.expect("rope_freqs.weight is neither Llama 3.1's nor Llama 3.2's scaling");
    Some(serde_json::json!({
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": low_freq_factor,
        "high_freq_factor": high_freq_factor,
        "original_max_position_embeddings": original_context,
    }))
}

/// Writes the model of `gguf` as a Hugging Face folder would hold it: F32 safetensors under
/// Hugging Face names (Llama's Q/K rows back in transformers' order, Gemma's norms without
/// their +1), config.json from the metadata, tokenizer.json and tokenizer_config.json from the
/// tokenizer keys or, for [`COMMITTED_TOKENIZERS`], as committed.
pub fn write_hf_folder(gguf_path: &Path, folder: &Path) {
    use doppler_engine::{gguf::MetadataValue, quant::dequantize};
    use safetensors::tensor::{Dtype, TensorView};
    use serde_json::{json, Map, Value};

    let gguf = GgufFile::open(gguf_path).unwrap();
    let meta = gguf.metadata();
    let arch = gguf.architecture().unwrap().to_string();
    let key = |name: &str| format!("{arch}.{name}");
    let u32_of = |name: &str| meta.get_u32(&key(name)).unwrap();
    let (n_heads, n_kv_heads) =
        (u32_of("attention.head_count").unwrap(), u32_of("attention.head_count_kv").unwrap());
    let model_type = if arch == "gemma3" { "gemma3_text" } else { arch.as_str() };
    let mut config = json!({
        "model_type": model_type,
        "num_hidden_layers": u32_of("block_count"),
        "hidden_size": u32_of("embedding_length"),
        "intermediate_size": u32_of("feed_forward_length"),
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv_heads,
        "max_position_embeddings": u32_of("context_length"),
        "rope_theta": meta.get_f32(&key("rope.freq_base")).unwrap(),
        "rms_norm_eps": meta.get_f32(&key("attention.layer_norm_rms_epsilon")).unwrap(),
        "tie_word_embeddings": gguf.tensor("output.weight").is_none(),
    });
    if let Some(head_dim) = u32_of("attention.key_length") {
        config["head_dim"] = json!(head_dim);
    }
    if meta.get_str(&key("rope.scaling.type")).unwrap() == Some("llama3") {
        config["rope_scaling"] = json!({
            "rope_type": "llama3",
            "factor": meta.get_f32(&key("rope.scaling.factor")).unwrap(),
            "low_freq_factor": meta.get_f32(&key("rope.scaling.low_freq_factor")).unwrap(),
            "high_freq_factor": meta.get_f32(&key("rope.scaling.high_freq_factor")).unwrap(),
            "original_max_position_embeddings": u32_of("rope.scaling.original_context_length"),
        });
    } else if meta.get_str(&key("rope.scaling.type")).unwrap() == Some("linear") {
        config["rope_scaling"] =
            json!({"rope_type": "linear", "factor": meta.get_f32(&key("rope.scaling.factor")).unwrap()});
    } else if let Some(scaling) = llama3_scaling_of_rope_freqs(&gguf, &key) {
        config["rope_scaling"] = scaling;
    }
    if arch == "gemma3" {
        let head_dim = u32_of("attention.key_length").unwrap();
        let layers = u32_of("block_count").unwrap();
        config["query_pre_attn_scalar"] = json!(head_dim);
        config["sliding_window"] = json!(u32_of("attention.sliding_window"));
        config["rope_local_base_freq"] = json!(meta.get_f32(&key("rope.freq_base_swa")).unwrap());
        config["layer_types"] = (1..=layers)
            .map(|layer| if layer.is_multiple_of(6) { "full_attention" } else { "sliding_attention" })
            .collect();
    }
    if arch == "phi3" {
        let head_dim = u32_of("embedding_length").unwrap() / n_heads;
        config["partial_rotary_factor"] =
            json!(u32_of("rope.dimension_count").unwrap() as f32 / head_dim as f32);
        config["original_max_position_embeddings"] = json!(u32_of("rope.scaling.original_context_length"));
        let factors = |name: &str| {
            let info = gguf.tensor(name).unwrap();
            dequantize(info.ggml_type, &gguf.tensor_data(info)).unwrap()
        };
        config["rope_scaling"] = json!({
            "type": "longrope",
            "long_factor": factors(ROPE_FACTOR_TENSORS[0]),
            "short_factor": factors(ROPE_FACTOR_TENSORS[1]),
        });
    }
    std::fs::write(folder.join("config.json"), config.to_string()).unwrap();

    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    let written_back = |name: &str| name != "rope_freqs.weight" && !ROPE_FACTOR_TENSORS.contains(&name);
    for info in gguf.tensors().iter().filter(|info| written_back(&info.name)) {
        let mut values = dequantize(info.ggml_type, &gguf.tensor_data(info)).unwrap();
        if arch == "gemma3" && info.name.ends_with("norm.weight") {
            values.iter_mut().for_each(|value| *value -= 1.0);
        }
        let heads = match info.name.as_str() {
            name if arch == "llama" && name.ends_with("attn_q.weight") => Some(n_heads as usize),
            name if arch == "llama" && name.ends_with("attn_k.weight") => Some(n_kv_heads as usize),
            _ => None,
        };
        if let Some(heads) = heads {
            let row_len = info.dims[0] as usize;
            let head_rows = info.rows() as usize / heads;
            let half = head_rows / 2;
            let interleaved = values.clone();
            for head in 0..heads {
                for i in 0..half {
                    for j in 0..2 {
                        let from = (head * head_rows + 2 * i + j) * row_len;
                        let to = (head * head_rows + j * half + i) * row_len;
                        values[to..to + row_len].copy_from_slice(&interleaved[from..from + row_len]);
                    }
                }
            }
        }
        let shape = info.dims.iter().rev().map(|&d| d as usize).collect();
        tensors.push((
            hf_name(&arch, &info.name),
            shape,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ));
    }
    let views = tensors.iter().map(|(name, shape, bytes)| {
        (name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytes).unwrap())
    });
    safetensors::serialize_to_file(views, None, &folder.join("model.safetensors")).unwrap();

    let fixture_name = gguf_path.parent().and_then(Path::file_name).unwrap().to_string_lossy();
    if COMMITTED_TOKENIZERS.contains(&fixture_name.as_ref()) {
        // `tests/data/hf/<name>/model.gguf` of the repository.
        let repository = gguf_path.ancestors().nth(5).unwrap();
        let committed = repository.join("tools/hf_fixtures/tokenizers").join(fixture_name.as_ref());
        for file in ["tokenizer.json", "tokenizer_config.json"] {
            std::fs::copy(committed.join(file), folder.join(file)).unwrap();
        }
        return;
    }
    let tokens = meta.get_string_array("tokenizer.ggml.tokens").unwrap().unwrap();
    let types = meta.get_i32_array("tokenizer.ggml.token_type").unwrap().unwrap();
    let mut vocab = Map::new();
    let mut added = Vec::new();
    for (id, (token, kind)) in tokens.iter().zip(&types).enumerate() {
        match kind {
            3 | 4 => added.push(json!({"id": id, "content": token, "special": *kind == 3})),
            5 if token.starts_with("[PAD") => {}
            _ => {
                vocab.insert(token.to_string(), json!(id));
            }
        }
    }
    let merges: Vec<&str> = meta.get_string_array("tokenizer.ggml.merges").unwrap().unwrap().iter().collect();
    let split = match meta.get_str("tokenizer.ggml.pre").unwrap() {
        Some("qwen2") => QWEN2_SPLIT,
        Some("llama-bpe") => LLAMA3_SPLIT,
        other => panic!("no tokenizer.json regex for pre-tokenizer {other:?}"),
    };
    let tokenizer = json!({
        "version": "1.0",
        "added_tokens": added,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
        ]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "vocab": vocab, "merges": merges},
    });
    std::fs::write(folder.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let token_of =
        |key: &str| meta.get_u32(key).unwrap().map(|id| tokens.get(id as usize).unwrap().to_string());
    let mut tokenizer_config = json!({
        "bos_token": token_of("tokenizer.ggml.bos_token_id"),
        "eos_token": token_of("tokenizer.ggml.eos_token_id"),
        "chat_template": meta.get_str("tokenizer.chat_template").unwrap(),
    });
    if let Some(MetadataValue::Bool(add_bos)) = meta.get("tokenizer.ggml.add_bos_token") {
        tokenizer_config["add_bos_token"] = Value::Bool(*add_bos);
    }
    std::fs::write(folder.join("tokenizer_config.json"), tokenizer_config.to_string()).unwrap();
}
