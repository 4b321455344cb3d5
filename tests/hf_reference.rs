//! Each architecture against Hugging Face transformers (float32) on tiny random-weight models
//! converted by llama.cpp (`tests/data/hf/<name>/`, format in the fixture README): first-step
//! logits within the fixture's stated tolerance on transformers' top-32, and 16 greedy tokens
//! identical, except where a step is a near-tie (top-2 gap below `NEAR_TIE` in transformers'
//! logits or ours), after which the continuations may differ.

mod support;

use doppler_engine::{CancelToken, GenerateOptions, LoadOptions, SamplingParams};
use serde::Deserialize;
use support::{gpu::default_engine, models::fixtures_dir};

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

/// Phi 3's original context: the longest a short-factor context may be.
const SHORT_CONTEXT: u32 = 2048;

fn check_fixture(name: &str) {
    let dir = fixtures_dir().join(name);
    let text = std::fs::read_to_string(dir.join("reference.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("reference.json").display()));
    let reference: Reference = serde_json::from_str(&text).unwrap();
    let engine = default_engine();
    // transformers picks Phi 3's LongRoPE factors by sequence length (long past the original
    // 2,048 positions), the engine by context length, as llama.cpp does: short prompts run
    // in a context within the original one, long prompts in one that holds them.
    let load = |context_len: u32| {
        let options =
            LoadOptions { context_len: Some(context_len), max_batch: Some(64), ..Default::default() };
        let model = engine.load_model(&dir.join("model.gguf"), options, &mut |_| {}).unwrap();
        assert_eq!(model.info().architecture, reference.architecture);
        model
    };
    let needed = |case: &Case| (case.prompt_tokens.len() + case.greedy_tokens.len()) as u32 + 8;
    let short_model = load(SHORT_CONTEXT);
    let longest = reference.cases.iter().map(needed).max().unwrap_or(1);
    let long_model = (longest > SHORT_CONTEXT).then(|| load(longest));
    let mut short_session = short_model.new_session().unwrap();
    let mut long_session = long_model.as_ref().map(|model| model.new_session().unwrap());
    let mut worst = 0.0f32;
    for (index, case) in reference.cases.iter().enumerate() {
        let label = format!("{name} case {index} ({:?})", case.prompt.chars().take(40).collect::<String>());
        let session = match &mut long_session {
            Some(session) if needed(case) > SHORT_CONTEXT => session,
            _ => &mut short_session,
        };
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
    let entries = std::fs::read_dir(fixtures_dir()).expect("tests/data/hf");
    let tested = ["llama3", "mistral", "qwen2", "qwen3", "phi3", "gemma3", "gemma3-27b"];
    for entry in entries {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(tested.contains(&name.as_str()), "fixture {name} has no test in hf_reference.rs");
    }
}
