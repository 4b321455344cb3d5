//! Tensors larger than a shard (Qwen2.5 7B's F16 token embedding is 1.09 GB, over the 1 GiB
//! shard limit) span shards: a GGUF converted with shards smaller than most of its matrices
//! installs into the store, verifies, and gives the GGUF's logits bit for bit.

mod support;

use doppler_engine::{
    gguf::GgufFile,
    rdrr::{open_rdrr, ShardCheck},
    store::ModelStore,
    Engine, LoadOptions, LoadedModel,
};
use doppler_store::convert::gguf_to_rdrr;
use support::{gpu::default_engine, models::fixture};

fn load(engine: &Engine, path: &std::path::Path) -> std::sync::Arc<LoadedModel> {
    let options = LoadOptions { context_len: Some(16), max_batch: Some(8), ..Default::default() };
    engine.load_model(path, options, &mut |_| {}).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Converts the `architecture` fixture with shards of 32 KiB, installs it, checks it
/// verifies, that each of `must_span` (name, least shards) spans shards, and that it gives
/// the GGUF's logits bit for bit.
fn check_spanning(engine: &Engine, architecture: &str, must_span: &[(&str, usize)]) {
    let gguf_path = fixture(architecture);
    let gguf = GgufFile::open(&gguf_path).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let written = gguf_to_rdrr(&gguf_path, scratch.path(), 32 << 10, &mut |_| {}).unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let name = format!("{architecture}-spanning-rdrr");
    let installed = store.install_verified(&name, &written.verified_files(), "test".into()).unwrap();
    // What `doppler models verify` does: every shard's size and sha256 against the store's record.
    store.verify(&installed).unwrap();

    let rdrr = open_rdrr(&installed.path, ShardCheck::Sha256).unwrap();
    let spanning: Vec<(&str, usize)> = rdrr
        .tensors()
        .iter()
        .map(|t| (t.name.as_str(), rdrr.tensor_bytes(t).pieces().len()))
        .filter(|&(_, pieces)| pieces > 1)
        .collect();
    eprintln!("{architecture}: tensors spanning shards (name, shards): {spanning:?}");
    for &(name, least) in must_span {
        assert!(
            spanning.iter().any(|&(spans, pieces)| spans == name && pieces >= least),
            "{architecture} {name}: {spanning:?}"
        );
    }
    for info in gguf.tensors() {
        let read = rdrr.tensor(&info.name).unwrap();
        assert!(rdrr.tensor_data(read) == gguf.tensor_data(info), "{architecture} {}", info.name);
    }

    let original = load(engine, &gguf_path);
    let converted = load(engine, &installed.path);
    assert_eq!(converted.info().weight_bytes, original.info().weight_bytes);
    let tokens = original.tokenizer().encode("The quick brown fox", original.tokenizer().add_bos()).unwrap();
    let expected = original.new_session().unwrap().logits_after(&tokens).unwrap();
    let actual = converted.new_session().unwrap().logits_after(&tokens).unwrap();
    let differing = expected.iter().zip(&actual).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    assert_eq!(differing, 0, "{architecture}: {differing} of {} logits differ", expected.len());
}

#[test]
fn a_model_whose_tensors_span_shards_verifies_and_gives_the_ggufs_logits() {
    let engine = default_engine();
    // The head (0.9 MB) and the token embedding span dozens of shards; each layer's q, output
    // and feed-forward matrices (36 and 72 KiB) two to four, and go up stacked with k and v
    // (9 KiB, in one shard) and with each other.
    check_spanning(
        &engine,
        "llama3",
        &[
            ("output.weight", 20),
            ("token_embd.weight", 10),
            ("blk.0.attn_q.weight", 2),
            ("blk.1.ffn_up.weight", 3),
        ],
    );
    // Fused q, k and v and fused gate and up, cut into their parts at load.
    check_spanning(&engine, "phi3", &[("blk.0.attn_qkv.weight", 2), ("blk.0.ffn_up.weight", 2)]);
}
