//! What a GGUF file's name says: its quantization (`…-Q4_K_M.gguf`) and, for a split model,
//! which part it is (`…-00002-of-00003.gguf`).

/// A part of a split GGUF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitPart {
    /// 1-based.
    pub index: u32,
    pub count: u32,
}

/// The split part `file_name` is, with the name it has without the part suffix
/// (`model-00001-of-00002.gguf` → (`model.gguf`, 1 of 2)).
pub fn split_part(file_name: &str) -> Option<(String, SplitPart)> {
    let stem = file_name.strip_suffix(".gguf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (base, index) = rest.rsplit_once('-')?;
    let number = |digits: &str| -> Option<u32> {
        (digits.len() == 5 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok())?
    };
    let part = SplitPart { index: number(index)?, count: number(count)? };
    (part.index >= 1 && part.index <= part.count).then(|| (format!("{base}.gguf"), part))
}

/// llama.cpp's quantization label in a file name, upper-cased (`Q4_K_M`, `IQ4_XS`, `Q8_0`,
/// `BF16`…): the last word of the name (words are separated by `-` and `.`) that reads
/// as `Q<digits>_…`, `IQ<digits>_…`, `TQ<digits>_…`, `F16`, `BF16`, `F32` or `MXFP4`.
pub fn quantization_label(file_name: &str) -> Option<String> {
    let base = split_part(file_name).map_or_else(|| file_name.to_string(), |(base, _)| base);
    let upper = base.strip_suffix(".gguf").unwrap_or(&base).to_ascii_uppercase();
    // Words are separated by '-' and '.'; a label's own parts are joined by '_'.
    upper.split(['-', '.']).rev().find(|word| is_label(word)).map(str::to_string)
}

fn is_label(word: &str) -> bool {
    if matches!(word, "F16" | "BF16" | "F32" | "MXFP4") {
        return true;
    }
    let mut parts = word.split('_');
    let Some(head) = parts.next() else { return false };
    let digits =
        head.strip_prefix("IQ").or_else(|| head.strip_prefix("TQ")).or_else(|| head.strip_prefix('Q'));
    let head_ok = digits.is_some_and(|digits| {
        !digits.is_empty() && digits.len() <= 2 && digits.bytes().all(|b| b.is_ascii_digit())
    });
    head_ok
        && parts.all(|part| {
            !part.is_empty() && part.len() <= 3 && part.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_from_the_name() {
        let cases = [
            ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", Some("Q4_K_M")),
            ("qwen2.5-7b-instruct-q5_k_m-00001-of-00002.gguf", Some("Q5_K_M")),
            ("gemma-3-4b-it-IQ4_XS.gguf", Some("IQ4_XS")),
            ("model.Q8_0.gguf", Some("Q8_0")),
            ("Qwen3-8B-BF16.gguf", Some("BF16")),
            ("phi-3-mini-f16.gguf", Some("F16")),
            ("Qwen3-30B-A3B-UD-Q4_K_XL.gguf", Some("Q4_K_XL")),
            ("Qwen2.5-7B.gguf", None),
            ("model.gguf", None),
        ];
        for (file_name, label) in cases {
            assert_eq!(quantization_label(file_name).as_deref(), label, "{file_name}");
        }
    }

    #[test]
    fn split_parts_are_recognised() {
        assert_eq!(
            split_part("big-Q8_0-00002-of-00003.gguf"),
            Some(("big-Q8_0.gguf".to_string(), SplitPart { index: 2, count: 3 }))
        );
        assert_eq!(split_part("big-Q8_0-00004-of-00003.gguf"), None);
        assert_eq!(split_part("big-Q8_0-2-of-3.gguf"), None);
        assert_eq!(split_part("big-Q8_0.gguf"), None);
    }
}
