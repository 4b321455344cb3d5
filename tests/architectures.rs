//! Every architecture's synthetic shape (`doppler synth`), shrunk to two layers of hidden 256
//! but with its features (biases, q/k norms, fused tensors, RoPE factors, GQA ratio, head
//! dimension), loads and runs prefill and decode steps to finite, non-constant logits. The
//! tokenizer comes from SmolLM2 (`DOPPLER_TEST_MODELS_DIR`); weights are random.

mod support;

use doppler_engine::{
    gguf::GgufFile,
    synth::{write_synthetic, SynthShape, SHAPES},
    CancelToken, GenerateOptions, LoadOptions, SamplingParams,
};
use support::{
    compare::argmax,
    gpu::default_engine,
    models::{model_path, SMOLLM2},
};

#[test]
fn every_synthetic_shape_loads_and_steps() {
    let Some(donor_path) = model_path(SMOLLM2) else { return };
    let donor = GgufFile::open(&donor_path).unwrap();
    let vocab = donor.metadata().get_str_array("tokenizer.ggml.tokens").unwrap().unwrap().len() as u32;
    let engine = default_engine();
    let scratch = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for (arch, size) in SHAPES {
        let shape = SynthShape::named(arch, size).unwrap();
        if seen.contains(&shape.label) {
            continue;
        }
        seen.push(shape.label);
        let tiny = shape.tiny(vocab);
        let path = scratch.path().join(format!("{arch}-{size}.gguf"));
        write_synthetic(&tiny, &donor, &path, 7).unwrap();
        let model = engine
            .load_model(
                &path,
                LoadOptions { context_len: Some(64), max_batch: Some(8), ..Default::default() },
                &mut |_| {},
            )
            .unwrap_or_else(|e| panic!("{arch} {size}: {e}"));
        assert_eq!(model.info().architecture, shape.arch);
        let mut session = model.new_session().unwrap();
        let prompt: Vec<u32> = (1..12).collect();
        let logits = session.logits_after(&prompt).unwrap();
        assert_eq!(logits.len(), vocab as usize, "{arch} {size}");
        assert!(logits.iter().all(|l| l.is_finite()), "{arch} {size}: non-finite logits");
        let (min, max) = logits.iter().fold((f32::MAX, f32::MIN), |(a, b), &l| (a.min(l), b.max(l)));
        assert!(max - min > 1e-3, "{arch} {size}: constant logits");
        session.reset();
        let options = GenerateOptions {
            sampling: SamplingParams::greedy(),
            max_tokens: 3,
            stop: Vec::new(),
            ignore_eos: true,
        };
        let summary = session.generate(&prompt, &options, &CancelToken::new(), &mut |_| {}).unwrap();
        assert_eq!(summary.tokens.len(), 3, "{arch} {size}");
        // The greedy first token is the argmax of the prefill logits.
        assert_eq!(summary.tokens[0], argmax(&logits), "{arch} {size}");
    }
}
