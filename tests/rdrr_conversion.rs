//! RDRR made by the converters, loaded by the engine: an RDRR converted from a GGUF gives
//! that GGUF's logits bit for bit (same types, same bytes, same kernels), for every tiny
//! architecture fixture and for SmolLM2 135M on one short prompt; one converted from a
//! safetensors folder in F16, Q8_0 or the Q4_K_M mix gives the GGUF's logits within a
//! quantization tolerance, and the Q4_K_M mix picks llama.cpp's types.

mod support;

use std::path::{Path, PathBuf};

use doppler_engine::{
    gguf::{GgmlType, GgufFile},
    ChatMessage, Engine, LoadOptions, LoadedModel,
};
use doppler_store::convert::gguf_to_rdrr;
use support::{
    compare::{argmax, max_abs_diff},
    gpu::default_engine,
    models::{fixture, fixtures_dir, model_path, SMOLLM2},
};

fn fixtures() -> Vec<PathBuf> {
    let dir = fixtures_dir();
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("model.gguf"))
        .filter(|path| path.is_file())
        .collect();
    found.sort();
    assert!(found.len() >= 6, "the architecture fixtures under {}", dir.display());
    found
}

fn load(engine: &Engine, path: &Path) -> std::sync::Arc<LoadedModel> {
    let options = LoadOptions { context_len: Some(64), max_batch: Some(16), ..Default::default() };
    engine.load_model(path, options, &mut |_| {}).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Converts `gguf` into `dir` and checks both give identical logits after `text`.
fn check_same_logits(engine: &Engine, gguf: &Path, dir: &Path, shard_limit: u64, text: &str) {
    let written = gguf_to_rdrr(gguf, dir, shard_limit, &mut |_| {}).unwrap();
    assert!(written.files.len() > 2, "{}: several shards, got {:?}", gguf.display(), written.files);
    let original = load(engine, gguf);
    let converted = load(engine, &written.manifest().path);
    assert_eq!(converted.info().architecture, original.info().architecture);
    assert_eq!(converted.info().quantization, original.info().quantization);
    assert_eq!(converted.info().weight_bytes, original.info().weight_bytes);
    let tokens = original.tokenizer().encode(text, original.tokenizer().add_bos()).unwrap();
    assert_eq!(converted.tokenizer().encode(text, converted.tokenizer().add_bos()).unwrap(), tokens);
    assert_eq!(converted.chat_template().origin(), original.chat_template().origin());
    let chat = [ChatMessage::user(text)];
    assert_eq!(
        converted.chat_template().render(&chat, true).ok(),
        original.chat_template().render(&chat, true).ok()
    );
    let expected = original.new_session().unwrap().logits_after(&tokens).unwrap();
    let actual = converted.new_session().unwrap().logits_after(&tokens).unwrap();
    let differing = expected.iter().zip(&actual).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    assert_eq!(differing, 0, "{}: {differing} of {} logits differ", gguf.display(), expected.len());
}

#[test]
fn an_rdrr_made_from_each_fixture_gives_its_logits_bit_for_bit() {
    let engine = default_engine();
    for gguf in fixtures() {
        let dir = tempfile::tempdir().unwrap();
        // Shards just large enough for the largest tensor: each fixture spans several.
        let largest = GgufFile::open(&gguf).unwrap().tensors().iter().map(|t| t.n_bytes).max().unwrap();
        check_same_logits(&engine, &gguf, dir.path(), largest + 256, "The quick brown fox jumps");
    }
}

#[test]
fn an_rdrr_made_from_smollm2_gives_its_logits_bit_for_bit() {
    let Some(gguf) = model_path(SMOLLM2) else { return };
    let engine = default_engine();
    let dir = tempfile::tempdir().unwrap();
    check_same_logits(&engine, &gguf, dir.path(), 32 << 20, "Why is the sky blue?");
}

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

/// Writes the model of `gguf` as a Hugging Face folder would hold it: F32 safetensors under
/// Hugging Face names (Llama's Q/K rows back in transformers' order), config.json from the
/// metadata, tokenizer.json and tokenizer_config.json from the tokenizer keys.
fn write_hf_folder(gguf_path: &Path, folder: &Path) {
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
    }
    std::fs::write(folder.join("config.json"), config.to_string()).unwrap();

    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for info in gguf.tensors().iter().filter(|info| info.name != "rope_freqs.weight") {
        let mut values = dequantize(info.ggml_type, gguf.tensor_data(info)).unwrap();
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

/// Requantizing these fixtures' random weights into another type moves a logit by at most
/// this: 2% of their ±12 span (measured: 0.17 at most, Qwen 3's F16 to Q8_0).
const LOGIT_TOLERANCE: f32 = 0.25;
/// The Q4_K_M mix (4.5 bits a weight against Q8_0's 8.5) moves a logit by at most 1.0
/// (measured: the llama fixture's Q4_K weights requantized; 0.69 for Qwen 3, whose rows of 256
/// take Q4_K and the rest Q8_0), under 9% of the ±12 span; a tensor in a wrong layout or type
/// moves them by about the whole span.
const Q4_K_M_LOGIT_TOLERANCE: f32 = 1.25;

#[test]
fn a_safetensors_folder_converts_to_the_ggufs_logits() {
    use doppler_engine::rdrr::open_rdrr;
    use doppler_store::convert::{safetensors_to_rdrr, TargetQuant};
    let engine = default_engine();
    for architecture in ["llama3", "qwen2", "qwen3"] {
        let gguf = fixture(architecture);
        let folder = tempfile::tempdir().unwrap();
        write_hf_folder(&gguf, folder.path());
        let original = load(&engine, &gguf);
        let text = "The quick brown fox jumps";
        let tokens = original.tokenizer().encode(text, original.tokenizer().add_bos()).unwrap();
        let expected = original.new_session().unwrap().logits_after(&tokens).unwrap();
        // F16 holds F16 and F32 weights exactly; the llama fixture's head is Q6_K.
        let all_f16 = GgufFile::open(&gguf)
            .unwrap()
            .tensors()
            .iter()
            .all(|t| matches!(t.ggml_type, GgmlType::F16 | GgmlType::F32) || t.dims.len() == 1);
        let gguf_types = tensor_types(&GgufFile::open(&gguf).unwrap());
        for quant in [TargetQuant::F16, TargetQuant::Q8_0, TargetQuant::Q4_K_M] {
            let out = tempfile::tempdir().unwrap();
            let written =
                safetensors_to_rdrr(folder.path(), out.path(), quant, 4 << 20, &mut |_| {}).unwrap();
            let converted = load(&engine, &written.manifest().path);
            assert_eq!(converted.info().architecture, original.info().architecture);
            if quant == TargetQuant::Q4_K_M {
                assert_eq!(converted.info().quantization, "Q4_K_M");
                let rdrr = open_rdrr(&written.manifest().path).unwrap();
                if architecture == "llama3" {
                    // This fixture is llama.cpp's own Q4_K_M (rows of 256 and 512): the same
                    // types, the head and layer 1's attn_v and ffn_down in Q6_K.
                    let same: Vec<_> =
                        gguf_types.iter().filter(|(name, _)| name != "rope_freqs.weight").cloned().collect();
                    assert_eq!(tensor_types(&rdrr), same, "{architecture}");
                }
                // Rows that are not whole 256-element blocks (the others' 128 and 384) take Q8_0.
                for tensor in rdrr.tensors().iter().filter(|t| t.dims.len() == 2) {
                    let k_quant = matches!(tensor.ggml_type, GgmlType::Q4_K | GgmlType::Q6_K);
                    assert_eq!(
                        k_quant,
                        tensor.dims[0] % 256 == 0,
                        "{architecture} {}: {:?} rows of {}",
                        tensor.name,
                        tensor.ggml_type,
                        tensor.dims[0]
                    );
                    assert!(k_quant || tensor.ggml_type == GgmlType::Q8_0, "{architecture} {}", tensor.name);
                }
            }
            assert_eq!(
                converted.tokenizer().encode(text, converted.tokenizer().add_bos()).unwrap(),
                tokens,
                "{architecture}"
            );
            let chat = [ChatMessage::user(text)];
            assert_eq!(
                converted.chat_template().render(&chat, true).ok(),
                original.chat_template().render(&chat, true).ok(),
                "{architecture}"
            );
            let actual = converted.new_session().unwrap().logits_after(&tokens).unwrap();
            let (worst, same_argmax) =
                (max_abs_diff(&expected, &actual), argmax(&expected) == argmax(&actual));
            let span = expected.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            eprintln!("{architecture} {quant:?}: largest logit difference {worst} (logits within ±{span}), argmax agrees: {same_argmax}");
            match quant {
                TargetQuant::F16 if all_f16 => {
                    assert_eq!(worst, 0.0, "{architecture}: F16 round-trips exactly")
                }
                TargetQuant::Q4_K_M => assert!(
                    worst <= Q4_K_M_LOGIT_TOLERANCE && same_argmax,
                    "{architecture} {quant:?}: {worst}"
                ),
                _ => {
                    assert!(worst <= LOGIT_TOLERANCE && same_argmax, "{architecture} {quant:?}: {worst}")
                }
            }
        }
    }
}

/// Each tensor's name and type, sorted by name.
fn tensor_types(file: &GgufFile) -> Vec<(String, GgmlType)> {
    let mut types: Vec<_> = file.tensors().iter().map(|t| (t.name.clone(), t.ggml_type)).collect();
    types.sort_by(|a, b| a.0.cmp(&b.0));
    types
}
