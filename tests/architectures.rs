//! Every architecture's synthetic shape (`doppler synth`), shrunk to two layers of hidden 256
//! but with its features (biases, q/k norms, fused tensors, RoPE factors, GQA ratio, head
//! dimension), loads and runs prefill and decode steps to finite, non-constant logits. The
//! tokenizer comes from SmolLM2 (`DOPPLER_TEST_MODELS_DIR`); weights are random. A tiny Llama
//! with every layer matrix in one weight type (`--weights`) does the same for each type.

mod support;

use doppler_engine::{
    gguf::GgufFile,
    synth::{write_synthetic, SynthShape, SynthWeights, SHAPES},
    CancelToken, Engine, GenerateOptions, LoadOptions, SamplingParams,
};
use support::{
    compare::argmax,
    gpu::default_engine,
    models::{model_path, SMOLLM2},
};

#[test]
fn every_synthetic_shape_loads_and_steps() {
    let Some(Synth { donor, vocab, engine, scratch }) = Synth::new() else { return };
    let mut seen = Vec::new();
    for (arch, size) in SHAPES {
        let shape = SynthShape::named(arch, size).unwrap();
        if seen.contains(&shape.label) {
            continue;
        }
        seen.push(shape.label);
        let tiny = shape.tiny(vocab);
        let path = scratch.path().join(format!("{arch}-{size}.gguf"));
        write_synthetic(&tiny, &donor, &path, 7, SynthWeights::Q4KM).unwrap();
        assert_loads_and_steps(&engine, &path, &format!("{arch} {size}"), shape.arch, vocab);
    }
}

#[test]
fn one_weight_type_synthetic_models_load_and_step() {
    let Some(Synth { donor, vocab, engine, scratch }) = Synth::new() else { return };
    let tiny = SynthShape::named("llama", "llama3.2-1b").unwrap().tiny(vocab);
    for name in ["Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS", "MXFP4"] {
        let weights = SynthWeights::parse(name).unwrap();
        let path = scratch.path().join(format!("{name}.gguf"));
        write_synthetic(&tiny, &donor, &path, 7, weights).unwrap();
        let file = GgufFile::open(&path).unwrap();
        let ffn_down = file.tensor("blk.0.ffn_down.weight").unwrap();
        assert_eq!(weights, SynthWeights::Pure(ffn_down.ggml_type), "{name}");
        assert_loads_and_steps(&engine, &path, name, "llama", vocab);
    }
}

/// What a test writing synthetic models needs: SmolLM2 as the tokenizer donor (its vocabulary
/// size), the engine, a scratch folder.
struct Synth {
    donor: GgufFile,
    vocab: u32,
    engine: Engine,
    scratch: tempfile::TempDir,
}

impl Synth {
    fn new() -> Option<Synth> {
        let donor = GgufFile::open(&model_path(SMOLLM2)?).unwrap();
        let vocab = donor.metadata().get_str_array("tokenizer.ggml.tokens").unwrap().unwrap().len() as u32;
        Some(Synth { donor, vocab, engine: default_engine(), scratch: tempfile::tempdir().unwrap() })
    }
}

/// The model at `path` loads as `arch` (its upload's progress counting every tensor once),
/// gives finite, non-constant logits after a prompt, and its greedy first token is their argmax.
fn assert_loads_and_steps(engine: &Engine, path: &std::path::Path, label: &str, arch: &str, vocab: u32) {
    let mut uploaded = Vec::new();
    let model = engine
        .load_model(
            path,
            LoadOptions { context_len: Some(64), max_batch: Some(8), ..Default::default() },
            &mut |progress| {
                if progress.stage == "uploading weights" {
                    uploaded.push(progress.fraction);
                }
            },
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(model.info().architecture, arch);
    assert!(uploaded.is_sorted(), "{label}: upload progress went back: {uploaded:?}");
    let last = uploaded.last().copied().unwrap_or_default();
    assert!((last - 1.0).abs() < 1e-5, "{label}: upload progress ended at {last}");
    let mut session = model.new_session().unwrap();
    let prompt: Vec<u32> = (1..12).collect();
    let logits = session.logits_after(&prompt).unwrap();
    assert_eq!(logits.len(), vocab as usize, "{label}");
    assert!(logits.iter().all(|l| l.is_finite()), "{label}: non-finite logits");
    let (min, max) = logits.iter().fold((f32::MAX, f32::MIN), |(a, b), &l| (a.min(l), b.max(l)));
    assert!(max - min > 1e-3, "{label}: constant logits");
    session.reset();
    let options = GenerateOptions {
        sampling: SamplingParams::greedy(),
        max_tokens: 3,
        stop: Vec::new(),
        ignore_eos: true,
    };
    let summary = session.generate(&prompt, &options, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(summary.tokens.len(), 3, "{label}");
    // The greedy first token is the argmax of the prefill logits.
    assert_eq!(summary.tokens[0], argmax(&logits), "{label}");
}
