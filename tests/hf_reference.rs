//! Each architecture against Hugging Face transformers (float32) on tiny random-weight models
//! converted by llama.cpp (`tests/data/hf/<name>/`, format in the fixture README): first-step
//! logits within the fixture's stated tolerance on transformers' top-32, and 16 greedy tokens
//! identical, except where a step is a near-tie (top-2 gap below `NEAR_TIE` in transformers'
//! logits or ours), after which the continuations may differ.

mod support;

use support::{models::fixtures_dir, transformers::check_against_transformers};

fn check_fixture(name: &str) {
    check_against_transformers(name, &fixtures_dir().join(name).join("model.gguf"));
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

/// Every fixture directory has its test above: none is left unchecked.
#[test]
fn every_fixture_has_a_test() {
    let entries = std::fs::read_dir(fixtures_dir()).expect("tests/data/hf");
    let tested = ["llama3", "mistral", "qwen2", "qwen3", "phi3", "gemma3"];
    for entry in entries {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(tested.contains(&name.as_str()), "fixture {name} has no test in hf_reference.rs");
    }
}
