//! The names the store turns into paths. Both come from users or from manifests on disk, so
//! they are checked to stay a single path component inside the store.

use std::path::{Component, Path};

use super::StoreError;

const MAX_MODEL_NAME_LEN: usize = 64;
const MAX_FILE_NAME_LEN: usize = 255;

/// A model name: 1 to 64 ASCII letters, digits, `.`, `_` or `-`, starting with a letter or digit.
pub fn check_model_name(name: &str) -> Result<(), StoreError> {
    let invalid = |reason| StoreError::InvalidName { name: name.to_string(), reason };
    if name.is_empty() || name.len() > MAX_MODEL_NAME_LEN {
        return Err(invalid("a name has 1 to 64 characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid("a name starts with a letter or digit"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        return Err(invalid("a name has only ASCII letters, digits, '.', '_' and '-'"));
    }
    Ok(())
}

/// A model name made from a file name: `SmolLM2-135M-Instruct.Q4_1.gguf` →
/// `smollm2-135m-instruct.q4_1`; `None` when nothing usable is left.
pub fn model_name_from_file(file_name: &str) -> Option<String> {
    let stem = Path::new(file_name).file_stem()?.to_string_lossy().to_lowercase();
    let name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect();
    let name: String = name.trim_start_matches(['.', '_', '-']).chars().take(MAX_MODEL_NAME_LEN).collect();
    (!name.is_empty()).then_some(name)
}

/// Whether `file_name` is one plain path component (no separators, not `.` or `..`).
pub(crate) fn is_plain_file_name(file_name: &str) -> bool {
    let mut components = Path::new(file_name).components();
    let single_normal = matches!(components.next(), Some(Component::Normal(part)) if part == file_name)
        && components.next().is_none();
    single_normal && file_name.len() <= MAX_FILE_NAME_LEN && !file_name.contains(['/', '\\', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_stay_one_safe_component() {
        for good in ["gemma-3-270m", "smollm2-135m-instruct", "a", "Q4_K_M.v2"] {
            assert!(check_model_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "-flag", "../up", "a/b", "a\\b", "spa ce", "ünï", &"x".repeat(65)] {
            assert!(check_model_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_from_files_are_valid_names() {
        assert_eq!(
            model_name_from_file("SmolLM2-135M-Instruct.Q4_1.gguf").as_deref(),
            Some("smollm2-135m-instruct.q4_1")
        );
        assert_eq!(model_name_from_file("_Llama 3 (8B).gguf").as_deref(), Some("llama-3--8b-"));
        assert_eq!(model_name_from_file("___.gguf"), None);
        let long = model_name_from_file(&format!("{}.gguf", "x".repeat(300))).unwrap();
        assert!(check_model_name(&long).is_ok());
    }

    #[test]
    fn file_names_are_single_components() {
        assert!(is_plain_file_name("gemma-3-270m-q4_k_m.gguf"));
        for bad in ["", ".", "..", "../x.gguf", "/etc/passwd", "a/b.gguf", "a\\b.gguf", "nul\0.gguf"] {
            assert!(!is_plain_file_name(bad), "{bad:?}");
        }
    }
}
