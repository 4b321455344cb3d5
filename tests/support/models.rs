//! Where tests find models: the two default models in `DOPPLER_TEST_MODELS_DIR` (`make test`
//! links them into `target/test-models`), llama.cpp's reference outputs for them, and the
//! small architecture fixtures of `tests/data/hf/`. The engine's unit tests and the app's
//! tests take this file alone (`#[path]`), so it needs only std, serde and serde_json.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

pub const GEMMA: &str = "gemma-3-270m-q4_k_m.gguf";
pub const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The path of `file_name` in `DOPPLER_TEST_MODELS_DIR`. Panics with instructions when it is
/// missing, unless `DOPPLER_ALLOW_MISSING_MODELS=1`, in which case the test should return early.
pub fn model_path(file_name: &str) -> Option<PathBuf> {
    let allow_missing = std::env::var("DOPPLER_ALLOW_MISSING_MODELS").is_ok_and(|v| v == "1");
    let missing = |why: String| {
        if allow_missing {
            eprintln!("skipping: {why} (DOPPLER_ALLOW_MISSING_MODELS=1)");
            None
        } else {
            panic!(
                "{why}: set DOPPLER_TEST_MODELS_DIR to a directory holding {GEMMA} and {SMOLLM2} \
                 (`make test-models` fills target/test-models), or DOPPLER_ALLOW_MISSING_MODELS=1 to skip"
            )
        }
    };
    let Some(dir) = std::env::var_os("DOPPLER_TEST_MODELS_DIR") else {
        return missing("DOPPLER_TEST_MODELS_DIR is not set".to_string());
    };
    let path = PathBuf::from(dir).join(file_name);
    if path.is_file() {
        Some(path)
    } else {
        missing(format!("{} does not exist", path.display()))
    }
}

/// llama.cpp's outputs for the default models: `DOPPLER_REFERENCE_DIR`, by default
/// `shared/reference` beside the repository.
pub fn reference_dir() -> PathBuf {
    match std::env::var_os("DOPPLER_REFERENCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => repository_root().join("../shared/reference"),
    }
}

/// One JSON file of [`reference_dir`].
pub fn read_reference<T: DeserializeOwned>(file_name: &str) -> T {
    let path = reference_dir().join(file_name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e} (set DOPPLER_REFERENCE_DIR)", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// `tests/data/hf/`: one folder per architecture, each with a tiny `model.gguf`.
pub fn fixtures_dir() -> PathBuf {
    repository_root().join("tests/data/hf")
}

/// The tiny GGUF of one architecture fixture (`llama3`, `gemma3`, `qwen2`…).
pub fn fixture(architecture: &str) -> PathBuf {
    fixtures_dir().join(architecture).join("model.gguf")
}

/// The folder above the crate under test that holds `tests/support` (crates sit at different
/// depths: `crates/<name>`, `src-tauri`).
fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("tests/support").is_dir())
        .expect("the repository's tests/support above the crate")
        .to_path_buf()
}
