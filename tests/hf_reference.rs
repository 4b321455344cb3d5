//! Each architecture against Hugging Face transformers (float32) on tiny random-weight models
//! converted by llama.cpp (`tests/data/hf/<name>/`, format in the fixture README): first-step
//! logits within the fixture's stated tolerance on transformers' top-32, and 16 greedy tokens
//! identical, except where a step is a near-tie (top-2 gap below `NEAR_TIE` in transformers'
//! logits or ours), after which the continuations may differ.

use std::path::{Path, PathBuf};

use doppler_engine::{CancelToken, Engine, EngineOptions, GenerateOptions, LoadOptions, SamplingParams};
use serde::Deserialize;

/// A top-2 logit gap below this is a tie that float rounding may break either way.
const NEAR_TIE: f32 = 0.05;

#[derive(Deserialize)]
struct Reference {
    architecture: String,
    logit_tolerance: f32,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    prompt: String,
    prompt_tokens: Vec<u32>,
    first_step_top: Vec<(u32, f32)>,
    greedy_tokens: Vec<u32>,
    greedy_top2_gaps: Vec<f32>,
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf")
}

fn top2_gap(logits: &[f32]) -> f32 {
    let (mut first, mut second) = (f32::MIN, f32::MIN);
    for &l in logits {
        if l > first {
            (first, second) = (l, first);
        } else if l > second {
            second = l;
        }
    }
    first - second
}

fn check_fixture(name: &str) {
    let root = fixtures_dir();
    if !root.is_dir() {
        // The fixtures land with another branch; until then there is nothing to compare with.
        eprintln!("{}: no fixtures yet, {name} not checked", root.display());
        return;
    }
    let dir = root.join(name);
    let text = std::fs::read_to_string(dir.join("reference.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("reference.json").display()));
    let reference: Reference = serde_json::from_str(&text).unwrap();
    let longest = reference.cases.iter().map(|c| c.prompt_tokens.len()).max().unwrap_or(1) as u32;
    let engine = Engine::new(EngineOptions::default()).expect("a wgpu adapter");
    // Just enough context: transformers' LongRoPE picks by sequence length, and ours by
    // context, so a short context keeps Phi 3 on the short factors for short prompts.
    let options = LoadOptions { context_len: Some(longest + 24), max_batch: Some(64) };
    let model = engine.load_model(&dir.join("model.gguf"), options, &mut |_| {}).unwrap();
    assert_eq!(model.info().architecture, reference.architecture);
    let mut session = model.new_session().unwrap();
    let mut worst = 0.0f32;
    for (index, case) in reference.cases.iter().enumerate() {
        let label = format!("{name} case {index} ({:?})", case.prompt.chars().take(40).collect::<String>());
        session.reset();
        let logits = session.logits_after(&case.prompt_tokens).unwrap();
        for &(id, expected) in &case.first_step_top {
            let error = (logits[id as usize] - expected).abs();
            worst = worst.max(error);
            assert!(
                error <= reference.logit_tolerance,
                "{label}: token {id} logit {} vs transformers {expected} (tolerance {})",
                logits[id as usize],
                reference.logit_tolerance
            );
        }

        session.reset();
        let greedy = GenerateOptions {
            sampling: SamplingParams::greedy(),
            max_tokens: case.greedy_tokens.len() as u32,
            stop: Vec::new(),
            ignore_eos: true,
        };
        let ours = session.generate(&case.prompt_tokens, &greedy, &CancelToken::new(), &mut |_| {}).unwrap();
        if let Some(step) = ours.tokens.iter().zip(&case.greedy_tokens).position(|(a, b)| a != b) {
            let mut context = case.prompt_tokens.clone();
            context.extend(&case.greedy_tokens[..step]);
            session.reset();
            let our_gap = top2_gap(&session.logits_after(&context).unwrap());
            let their_gap = case.greedy_top2_gaps[step];
            eprintln!(
                "{label}: greedy step {step} differs ({} vs {}); top-2 gap transformers {their_gap:.4}, ours {our_gap:.4}",
                ours.tokens[step], case.greedy_tokens[step]
            );
            assert!(
                their_gap < NEAR_TIE || our_gap < NEAR_TIE,
                "{label}: greedy step {step} differs where it is no near-tie"
            );
        } else {
            assert_eq!(ours.tokens.len(), case.greedy_tokens.len(), "{label}");
        }
    }
    eprintln!("{name}: {} cases, largest logit error {worst:.5}", reference.cases.len());
}

#[test]
fn llama3_matches_transformers() {
    check_fixture("llama3");
}

#[test]
fn mistral_matches_transformers() {
    check_fixture("mistral");
}

#[test]
fn qwen2_matches_transformers() {
    check_fixture("qwen2");
}

#[test]
fn qwen3_matches_transformers() {
    check_fixture("qwen3");
}

#[test]
fn phi3_matches_transformers() {
    check_fixture("phi3");
}

#[test]
fn gemma3_matches_transformers() {
    check_fixture("gemma3");
}

/// Optional: the 27B's query scale, where a fixture of its own exists.
#[test]
fn gemma3_27b_matches_transformers() {
    if fixtures_dir().join("gemma3-27b").is_dir() {
        check_fixture("gemma3-27b");
    }
}

/// Every fixture directory has its test above: none is left unchecked.
#[test]
fn every_fixture_has_a_test() {
    let Ok(entries) = std::fs::read_dir(fixtures_dir()) else { return };
    let tested = ["llama3", "mistral", "qwen2", "qwen3", "phi3", "gemma3", "gemma3-27b"];
    for entry in entries {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(tested.contains(&name.as_str()), "fixture {name} has no test in hf_reference.rs");
    }
}
