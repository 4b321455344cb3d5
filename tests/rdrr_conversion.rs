//! RDRR made by the converters, loaded by the engine: an RDRR converted from a GGUF gives
//! that GGUF's logits bit for bit (same types, same bytes, same kernels), for every tiny
//! architecture fixture and for SmolLM2 135M on one short prompt.

use std::path::{Path, PathBuf};

use doppler_engine::{gguf::GgufFile, ChatMessage, Engine, EngineOptions, LoadOptions, LoadedModel};
use doppler_store::convert::gguf_to_rdrr;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf");
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
    let engine = Engine::new(EngineOptions::default()).expect("a wgpu adapter");
    for gguf in fixtures() {
        let dir = tempfile::tempdir().unwrap();
        // Shards just large enough for the largest tensor: each fixture spans several.
        let largest = GgufFile::open(&gguf).unwrap().tensors().iter().map(|t| t.n_bytes).max().unwrap();
        check_same_logits(&engine, &gguf, dir.path(), largest + 256, "The quick brown fox jumps");
    }
}

#[test]
fn an_rdrr_made_from_smollm2_gives_its_logits_bit_for_bit() {
    let Some(gguf) = test_model("SmolLM2-135M-Instruct.Q4_1.gguf") else { return };
    let engine = Engine::new(EngineOptions::default()).expect("a wgpu adapter");
    let dir = tempfile::tempdir().unwrap();
    check_same_logits(&engine, &gguf, dir.path(), 32 << 20, "Why is the sky blue?");
}

/// A default model from `DOPPLER_TEST_MODELS_DIR` (`make test` sets it); skipped only where
/// `DOPPLER_ALLOW_MISSING_MODELS=1`.
fn test_model(file_name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("DOPPLER_TEST_MODELS_DIR").map(|dir| PathBuf::from(dir).join(file_name));
    match path {
        Some(path) if path.is_file() => Some(path),
        _ if std::env::var("DOPPLER_ALLOW_MISSING_MODELS").is_ok_and(|v| v == "1") => None,
        _ => panic!("{file_name} not found: set DOPPLER_TEST_MODELS_DIR (make test-models fills one)"),
    }
}
