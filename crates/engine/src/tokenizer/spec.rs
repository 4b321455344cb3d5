use crate::gguf::{GgufFile, Metadata};

use super::limits::{MAX_MERGES, MAX_TOKENS, MAX_TOKEN_BYTES};
use super::sentencepiece::check_split_work;
use super::TokenizerError;

/// The tokenization algorithm named by `tokenizer.ggml.model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerModel {
    /// `llama`: SentencePiece BPE over characters, merge priority from the token scores,
    /// spaces written as '▁', unknown characters spelled as `<0xXX>` byte tokens (Gemma, Llama 2).
    SentencePiece,
    /// `gpt2`: byte-level BPE with explicit merges and a regex pre-tokenizer (SmolLM2, Llama 3, Qwen 2).
    ByteLevelBpe,
}

impl TokenizerModel {
    pub fn from_gguf_name(name: &str) -> Result<TokenizerModel, TokenizerError> {
        match name {
            "llama" => Ok(TokenizerModel::SentencePiece),
            "gpt2" => Ok(TokenizerModel::ByteLevelBpe),
            other => Err(TokenizerError::UnsupportedModel(other.to_string())),
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            TokenizerModel::SentencePiece => "SentencePiece",
            TokenizerModel::ByteLevelBpe => "byte-level BPE",
        }
    }
}

/// A token's role, from `tokenizer.ggml.token_type` (llama.cpp's `llama_token_type`, whose
/// values the discriminants are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum TokenType {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    /// Markup such as `<bos>` or `<|im_start|>`: matched whole in text, never split by BPE.
    Control = 3,
    /// Added vocabulary (Gemma's runs of spaces and newlines, HTML tags): matched whole in text.
    UserDefined = 4,
    Unused = 5,
    /// `<0xXX>`: one raw byte.
    Byte = 6,
}

impl TokenType {
    pub fn from_gguf(value: i32) -> TokenType {
        match value {
            1 => TokenType::Normal,
            2 => TokenType::Unknown,
            3 => TokenType::Control,
            4 => TokenType::UserDefined,
            5 => TokenType::Unused,
            6 => TokenType::Byte,
            _ => TokenType::Undefined,
        }
    }

    /// The value `tokenizer.ggml.token_type` holds for it.
    pub fn to_gguf(self) -> i32 {
        self as i32
    }

    /// Whether the token is cut out of raw text before BPE runs (llama.cpp's special-token cache).
    pub(super) fn matches_whole(self) -> bool {
        matches!(self, TokenType::Control | TokenType::UserDefined | TokenType::Unknown)
    }
}

/// Everything needed to build a [`super::Tokenizer`], as plain data: read from a GGUF file by
/// [`TokenizerSpec::from_gguf`] or written by hand in tests.
#[derive(Debug, Clone)]
pub struct TokenizerSpec {
    pub model: TokenizerModel,
    /// `tokenizer.ggml.pre`: which pre-tokenizer regexes a byte-level BPE model uses.
    pub pre: Option<String>,
    pub tokens: Vec<String>,
    /// One per token, or empty (all zero). SentencePiece merges by the merged token's score.
    pub scores: Vec<f32>,
    /// One per token, or empty (all normal).
    pub token_types: Vec<TokenType>,
    /// Byte-level BPE merges, `"left right"`, highest priority first.
    pub merges: Vec<String>,
    pub bos_id: Option<u32>,
    pub eos_id: Option<u32>,
    /// End of turn (`<end_of_turn>`, `<|eot_id|>`), when the model names it.
    pub eot_id: Option<u32>,
    pub unk_id: Option<u32>,
    pub pad_id: Option<u32>,
    /// Whether the model expects BOS in front of every prompt.
    pub add_bos: bool,
    /// Whether SentencePiece prefixes a space to text that starts the input or follows a special token.
    pub add_space_prefix: bool,
    pub chat_template: Option<String>,
}

const MODEL_KEY: &str = "tokenizer.ggml.model";
const TOKENS_KEY: &str = "tokenizer.ggml.tokens";
const MERGES_KEY: &str = "tokenizer.ggml.merges";

impl TokenizerSpec {
    /// Reads the `tokenizer.*` metadata. Defaults for absent flags follow llama.cpp: SentencePiece
    /// adds BOS and a space prefix; byte-level BPE adds neither, except Llama 3's pre-tokenizer adds BOS.
    pub fn from_gguf(gguf: &GgufFile) -> Result<TokenizerSpec, TokenizerError> {
        Self::from_metadata(gguf.metadata())
    }

    pub fn from_metadata(metadata: &Metadata) -> Result<TokenizerSpec, TokenizerError> {
        let model_name = metadata.get_str(MODEL_KEY)?.ok_or(TokenizerError::MissingKey { key: MODEL_KEY })?;
        let model = TokenizerModel::from_gguf_name(model_name)?;
        let pre = metadata.get_str("tokenizer.ggml.pre")?.map(str::to_string);
        let tokens =
            metadata.get_string_array(TOKENS_KEY)?.ok_or(TokenizerError::MissingKey { key: TOKENS_KEY })?;
        check_count(TOKENS_KEY, tokens.len(), MAX_TOKENS)?;
        if model == TokenizerModel::SentencePiece {
            // Before the vocabulary is copied.
            check_split_work(tokens.iter())?;
        }
        let tokens: Vec<String> = tokens.iter().map(str::to_string).collect();
        let scores = metadata.get_f32_array("tokenizer.ggml.scores")?.unwrap_or_default();
        let token_types = metadata
            .get_i32_array("tokenizer.ggml.token_type")?
            .unwrap_or_default()
            .into_iter()
            .map(TokenType::from_gguf)
            .collect();
        let merges = match metadata.get_string_array(MERGES_KEY)? {
            Some(merges) => {
                check_count(MERGES_KEY, merges.len(), MAX_MERGES)?;
                merges.iter().map(str::to_string).collect()
            }
            None => Vec::new(),
        };
        let default_add_bos = match model {
            TokenizerModel::SentencePiece => true,
            TokenizerModel::ByteLevelBpe => {
                matches!(pre.as_deref(), Some("llama3" | "llama-v3" | "llama-bpe"))
            }
        };
        let spec = TokenizerSpec {
            model,
            pre,
            tokens,
            scores,
            token_types,
            merges,
            bos_id: metadata.get_u32("tokenizer.ggml.bos_token_id")?,
            eos_id: metadata.get_u32("tokenizer.ggml.eos_token_id")?,
            eot_id: metadata.get_u32("tokenizer.ggml.eot_token_id")?,
            unk_id: metadata.get_u32("tokenizer.ggml.unknown_token_id")?,
            pad_id: metadata.get_u32("tokenizer.ggml.padding_token_id")?,
            add_bos: metadata.get_bool("tokenizer.ggml.add_bos_token")?.unwrap_or(default_add_bos),
            add_space_prefix: metadata
                .get_bool("tokenizer.ggml.add_space_prefix")?
                .unwrap_or(model == TokenizerModel::SentencePiece),
            chat_template: metadata.get_str("tokenizer.chat_template")?.map(str::to_string),
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Checks the sizes against the limits, that per-token arrays match the vocabulary and that
    /// named ids lie inside it.
    pub fn validate(&self) -> Result<(), TokenizerError> {
        let vocab_size = self.tokens.len();
        if vocab_size == 0 {
            return Err(TokenizerError::EmptyVocabulary);
        }
        check_count(TOKENS_KEY, vocab_size, MAX_TOKENS)?;
        check_count(MERGES_KEY, self.merges.len(), MAX_MERGES)?;
        if let Some((id, token)) = self.tokens.iter().enumerate().find(|(_, t)| t.len() > MAX_TOKEN_BYTES) {
            return Err(TokenizerError::TokenTooLong { id, len: token.len(), limit: MAX_TOKEN_BYTES });
        }
        for (key, len) in [
            ("tokenizer.ggml.scores", self.scores.len()),
            ("tokenizer.ggml.token_type", self.token_types.len()),
        ] {
            if len != 0 && len != vocab_size {
                return Err(TokenizerError::LengthMismatch { key, expected: vocab_size, found: len });
            }
        }
        for (key, id) in [
            ("tokenizer.ggml.bos_token_id", self.bos_id),
            ("tokenizer.ggml.eos_token_id", self.eos_id),
            ("tokenizer.ggml.eot_token_id", self.eot_id),
            ("tokenizer.ggml.unknown_token_id", self.unk_id),
            ("tokenizer.ggml.padding_token_id", self.pad_id),
        ] {
            if let Some(id) = id.filter(|&id| id as usize >= vocab_size) {
                return Err(TokenizerError::TokenIdOutOfRange { key, id, vocab_size });
            }
        }
        if self.add_bos && self.bos_id.is_none() {
            return Err(TokenizerError::MissingBos);
        }
        Ok(())
    }

    pub(super) fn token_type(&self, id: usize) -> TokenType {
        self.token_types.get(id).copied().unwrap_or(TokenType::Normal)
    }

    pub(super) fn score(&self, id: usize) -> f32 {
        self.scores.get(id).copied().unwrap_or(0.0)
    }
}

fn check_count(key: &'static str, count: usize, limit: usize) -> Result<(), TokenizerError> {
    if count > limit {
        return Err(TokenizerError::TooMany { key, count, limit });
    }
    Ok(())
}
