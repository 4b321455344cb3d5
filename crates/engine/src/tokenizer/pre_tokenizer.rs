//! The regexes that cut text into words before byte-level BPE, chosen by `tokenizer.ggml.pre`
//! the way llama.cpp chooses them. Each regex splits every piece the previous ones produced,
//! keeping both the matches and the text between them.

use super::TokenizerError;

/// How a byte-level BPE model pre-tokenizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PreTokenizerRules {
    pub(super) regexes: &'static [&'static str],
    /// A word that is itself a token is emitted whole, without running the merges (Llama 3).
    pub(super) ignore_merges: bool,
    /// The text is put in Unicode normal form C first (Qwen's tokenizer.json says so; without it a
    /// decomposed "e" + U+0301 tokenizes differently from the "é" the vocabulary was trained on).
    pub(super) nfc: bool,
}

const GPT2_WORDS: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";

const LLAMA3_WORDS: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

const QWEN2_WORDS: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// o200k (GPT-4o, gpt-oss, Phi-4-mini): a word is optional upper-case letters then lower-case ones (or
/// the reverse), with a contraction attached; punctuation runs keep trailing newlines and slashes.
const GPT4O_WORDS: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

const DEFAULT: PreTokenizerRules = PreTokenizerRules {
    regexes: &[r"[\p{P}\$\+<=>\^~\|]+", GPT2_WORDS, r"\p{N}+", r"[0-9][0-9][0-9]"],
    ignore_merges: false,
    nfc: false,
};
const GPT2: PreTokenizerRules =
    PreTokenizerRules { regexes: &[GPT2_WORDS], ignore_merges: false, nfc: false };
/// Single digits, then GPT-2 words (SmolLM, StarCoder).
const SINGLE_DIGITS: PreTokenizerRules =
    PreTokenizerRules { regexes: &[r"\p{N}", GPT2_WORDS], ignore_merges: false, nfc: false };
const LLAMA3: PreTokenizerRules =
    PreTokenizerRules { regexes: &[LLAMA3_WORDS], ignore_merges: true, nfc: false };
const QWEN2: PreTokenizerRules =
    PreTokenizerRules { regexes: &[QWEN2_WORDS], ignore_merges: false, nfc: true };
const GPT4O: PreTokenizerRules =
    PreTokenizerRules { regexes: &[GPT4O_WORDS], ignore_merges: true, nfc: false };

/// The names accepted, for error messages and documentation.
pub(super) const SUPPORTED_NAMES: &str =
    "default, gpt2, gpt-2, smollm, starcoder, llama3, llama-bpe, llama-v3, qwen2, gpt-4o";

/// The rules for `pre`; a model without `tokenizer.ggml.pre` gets llama.cpp's default.
pub(super) fn rules_for(pre: Option<&str>) -> Result<PreTokenizerRules, TokenizerError> {
    match pre {
        None | Some("default") => Ok(DEFAULT),
        Some("gpt2" | "gpt-2") => Ok(GPT2),
        Some("smollm" | "starcoder") => Ok(SINGLE_DIGITS),
        Some("llama3" | "llama-bpe" | "llama-v3") => Ok(LLAMA3),
        Some("qwen2") => Ok(QWEN2),
        Some("gpt-4o") => Ok(GPT4O),
        Some(other) => Err(TokenizerError::UnsupportedPreTokenizer(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_pick_their_rules_and_unknown_names_are_refused() {
        assert_eq!(rules_for(None).unwrap(), DEFAULT);
        assert_eq!(rules_for(Some("smollm")).unwrap(), SINGLE_DIGITS);
        assert!(rules_for(Some("llama-bpe")).unwrap().ignore_merges);
        assert!(!rules_for(Some("qwen2")).unwrap().ignore_merges);
        assert!(rules_for(Some("qwen2")).unwrap().nfc);
        assert_eq!(rules_for(Some("gpt-4o")).unwrap(), GPT4O);
        let err = rules_for(Some("tekken")).unwrap_err();
        assert!(matches!(&err, TokenizerError::UnsupportedPreTokenizer(name) if name == "tekken"));
        assert!(err.to_string().contains("smollm"), "{err}");
    }
}
