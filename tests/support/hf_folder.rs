//! A tiny GGUF fixture written back out as a Hugging Face model folder would hold it, for
//! the tests of conversion from safetensors (folders and Hub repositories).

use std::path::Path;

use doppler_engine::gguf::GgufFile;

/// The GGUF's tensor name → Hugging Face's (the converter's mapping read backwards).
fn hf_name(ours: &str) -> String {
    match ours {
        "token_embd.weight" => return "model.embed_tokens.weight".into(),
        "output_norm.weight" => return "model.norm.weight".into(),
        "output.weight" => return "lm_head.weight".into(),
        _ => {}
    }
    let rest = ours.strip_prefix("blk.").unwrap();
    let (layer, rest) = rest.split_once('.').unwrap();
    let (module, kind) = rest.rsplit_once('.').unwrap();
    let module = match module {
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
    };
    format!("model.layers.{layer}.{module}.{kind}")
}

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
/// Hugging Face names (Llama's Q/K rows back in transformers' order), config.json from the
/// metadata, tokenizer.json and tokenizer_config.json from the tokenizer keys.
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
    let mut config = json!({
        "model_type": arch,
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
    } else if let Some(scaling) = llama3_scaling_of_rope_freqs(&gguf, &key) {
        config["rope_scaling"] = scaling;
    }
    std::fs::write(folder.join("config.json"), config.to_string()).unwrap();

    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for info in gguf.tensors().iter().filter(|info| info.name != "rope_freqs.weight") {
        let mut values = dequantize(info.ggml_type, &gguf.tensor_data(info)).unwrap();
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
        tensors.push((hf_name(&info.name), shape, values.iter().flat_map(|v| v.to_le_bytes()).collect()));
    }
    let views = tensors.iter().map(|(name, shape, bytes)| {
        (name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytes).unwrap())
    });
    safetensors::serialize_to_file(views, None, &folder.join("model.safetensors")).unwrap();

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
