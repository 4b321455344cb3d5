use std::collections::BTreeMap;

use serde::Serialize;

use super::{quantization_label, split_part};
use crate::hub::RepoFile;

/// One model a repository offers as GGUF: one file, or the parts of a split model in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GgufChoice {
    /// llama.cpp's label (`Q4_K_M`), when the file name has one.
    pub quantization: Option<String>,
    /// The path of the file, or of a split model without its part suffix.
    pub name: String,
    pub files: Vec<RepoFile>,
    /// All parts together, in bytes.
    pub size: u64,
}

impl GgufChoice {
    /// The quantization, else the name.
    pub fn label(&self) -> &str {
        self.quantization.as_deref().unwrap_or(&self.name)
    }

    /// Whether this is a full-precision copy rather than a quantization.
    pub fn is_unquantized(&self) -> bool {
        matches!(self.quantization.as_deref(), Some("F16" | "BF16" | "F32"))
    }
}

/// The repository's GGUF models, smallest first. Vision projectors (`mmproj-…`) are not
/// models of their own, and a split model missing a part cannot be loaded; both are left out.
pub fn gguf_choices(files: &[RepoFile]) -> Vec<GgufChoice> {
    let mut by_name: BTreeMap<String, Vec<(u32, u32, &RepoFile)>> = BTreeMap::new();
    for file in files {
        let file_name = file.file_name();
        if !file_name.ends_with(".gguf") || file_name.starts_with("mmproj") {
            continue;
        }
        let (name, index, count) = match split_part(&file.path) {
            Some((name, part)) => (name, part.index, part.count),
            None => (file.path.clone(), 1, 1),
        };
        by_name.entry(name).or_default().push((index, count, file));
    }
    let mut choices: Vec<GgufChoice> = by_name
        .into_iter()
        .filter_map(|(name, mut parts)| {
            parts.sort_by_key(|&(index, _, _)| index);
            let count = parts[0].1;
            let complete = parts.len() == count as usize
                && parts
                    .iter()
                    .zip(1..)
                    .all(|(&(index, part_count, _), expected)| index == expected && part_count == count);
            if !complete {
                tracing::debug!(%name, "leaving out a split model with parts missing");
                return None;
            }
            let files: Vec<RepoFile> = parts.into_iter().map(|(_, _, file)| file.clone()).collect();
            Some(GgufChoice {
                quantization: quantization_label(&name),
                size: files.iter().map(|file| file.size).sum(),
                name,
                files,
            })
        })
        .collect();
    choices.sort_by(|a, b| a.size.cmp(&b.size).then_with(|| a.name.cmp(&b.name)));
    choices
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, size: u64) -> RepoFile {
        RepoFile { path: path.to_string(), size, sha256: None }
    }

    #[test]
    fn split_parts_make_one_choice_and_incomplete_ones_none() {
        let files = [
            file("README.md", 10),
            file("mmproj-model-f16.gguf", 600),
            file("m-Q8_0.gguf", 800),
            file("m-Q4_K_M.gguf", 450),
            file("F16/m-F16-00002-of-00002.gguf", 700),
            file("F16/m-F16-00001-of-00002.gguf", 900),
            file("m-BF16-00001-of-00002.gguf", 900),
        ];
        let choices = gguf_choices(&files);
        let labels: Vec<&str> = choices.iter().map(GgufChoice::label).collect();
        assert_eq!(labels, ["Q4_K_M", "Q8_0", "F16"]);
        let f16 = &choices[2];
        assert_eq!(f16.name, "F16/m-F16.gguf");
        assert_eq!(f16.size, 1600);
        assert_eq!(f16.files[0].path, "F16/m-F16-00001-of-00002.gguf");
        assert!(f16.is_unquantized());
    }
}
