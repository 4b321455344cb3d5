//! Locating the two default models for tests that read real files.

use std::path::PathBuf;

pub(crate) const GEMMA: &str = "gemma-3-270m-q4_k_m.gguf";
pub(crate) const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The path of `file_name` in `DOPPLER_TEST_MODELS_DIR`. Panics with instructions when it is
/// missing, unless `DOPPLER_ALLOW_MISSING_MODELS=1`, in which case the test should return early.
pub(crate) fn model_path(file_name: &str) -> Option<PathBuf> {
    let allow_missing = std::env::var("DOPPLER_ALLOW_MISSING_MODELS").is_ok_and(|v| v == "1");
    let missing = |why: String| {
        if allow_missing {
            eprintln!("skipping: {why} (DOPPLER_ALLOW_MISSING_MODELS=1)");
            None
        } else {
            panic!(
                "{why}: set DOPPLER_TEST_MODELS_DIR to a directory holding {GEMMA} and {SMOLLM2} \
                 (e.g. after `doppler models fetch-defaults`), or DOPPLER_ALLOW_MISSING_MODELS=1 to skip"
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
