use std::fmt;
use std::sync::Arc;

use tokenizers::models::bpe::Vocab;

use crate::gguf::GgufFile;

use super::pieces::TokenPieces;
use super::pre_tokenizer::rules_for;
use super::special_tokens::{added_tokens, effective_token_types, end_of_generation_ids};
use super::{byte_level, sentencepiece, TokenType, TokenizerError, TokenizerModel, TokenizerSpec};

/// A model's tokenizer, giving the same ids as llama.cpp for the same GGUF vocabulary.
///
/// Encoding always parses special tokens: control tokens (`<start_of_turn>`, `<|im_start|>`)
/// and user-defined tokens in the text become their single id.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    pieces: Arc<TokenPieces>,
    token_types: Vec<TokenType>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    add_bos: bool,
    add_space_prefix: bool,
    end_of_generation: Vec<u32>,
}

impl Tokenizer {
    pub fn from_gguf(gguf: &GgufFile) -> Result<Tokenizer, TokenizerError> {
        Self::from_spec(&TokenizerSpec::from_gguf(gguf)?)
    }

    pub fn from_spec(spec: &TokenizerSpec) -> Result<Tokenizer, TokenizerError> {
        spec.validate()?;
        if spec.model == TokenizerModel::SentencePiece {
            // Before the vocabulary is copied into the builder's maps.
            sentencepiece::check_split_work(spec.tokens.iter().map(String::as_str))?;
        }
        let texts = token_texts(spec);
        let token_types = effective_token_types(spec);
        // Later ids win for duplicated texts, as in llama.cpp's text-to-token map.
        let vocab: Vocab = texts.iter().enumerate().map(|(id, text)| (text.clone(), id as u32)).collect();
        let mut inner = match spec.model {
            TokenizerModel::SentencePiece => {
                let mut inner = tokenizers::Tokenizer::new(sentencepiece::model(spec, &texts, vocab)?);
                inner.with_normalizer(Some(sentencepiece::normalizer(spec)?));
                inner
            }
            TokenizerModel::ByteLevelBpe => {
                let rules = rules_for(spec.pre.as_deref())?;
                let pre_tokenizer = byte_level::pre_tokenizer(rules, &vocab)?;
                let mut inner = tokenizers::Tokenizer::new(byte_level::model(spec, vocab, rules)?);
                inner.with_pre_tokenizer(Some(pre_tokenizer));
                if rules.nfc {
                    inner.with_normalizer(Some(tokenizers::normalizers::NFC));
                }
                inner
            }
        };
        inner.add_tokens(&added_tokens(&texts, &token_types));
        Ok(Tokenizer {
            inner,
            pieces: Arc::new(TokenPieces::new(spec.model, &texts, &token_types)),
            token_types,
            bos_id: spec.bos_id,
            eos_id: spec.eos_id,
            add_bos: spec.add_bos,
            add_space_prefix: spec.model == TokenizerModel::SentencePiece && spec.add_space_prefix,
            end_of_generation: end_of_generation_ids(spec),
        })
    }

    /// The ids of `text`, with BOS in front when `add_bos` (pass [`Tokenizer::add_bos`] for the
    /// model's own rule).
    pub fn encode(&self, text: &str, add_bos: bool) -> Result<Vec<u32>, TokenizerError> {
        let encoding = self.inner.encode_fast(text, false).map_err(TokenizerError::Encode)?;
        let mut ids = Vec::with_capacity(encoding.len() + usize::from(add_bos));
        if add_bos {
            ids.push(self.bos_id.ok_or(TokenizerError::MissingBos)?);
        }
        ids.extend_from_slice(encoding.get_ids());
        Ok(ids)
    }

    /// The text of `ids`, special tokens written out; invalid UTF-8 becomes U+FFFD. The space
    /// that SentencePiece's `add_space_prefix` put in front of the text is taken off again.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        let mut strip_prefix_space = self.add_space_prefix;
        for &id in ids {
            let mut piece = self.pieces.get(id);
            if strip_prefix_space && self.token_type(id) != Some(TokenType::Control) {
                strip_prefix_space = false;
                if self.token_type(id) == Some(TokenType::Normal) {
                    piece = piece.strip_prefix(b" ").unwrap_or(piece);
                }
            }
            bytes.extend_from_slice(piece);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The raw bytes token `id` stands for: byte tokens resolved, '▁' as a space, the GPT-2 byte
    /// alphabet reversed, special tokens as their text. A token may hold part of a UTF-8
    /// character. Empty for an id outside the vocabulary.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.pieces.get(id)
    }

    pub fn token_to_id(&self, text: &str) -> Option<u32> {
        self.inner.token_to_id(text)
    }

    pub fn token_type(&self, id: u32) -> Option<TokenType> {
        self.token_types.get(id as usize).copied()
    }

    pub fn vocab_size(&self) -> usize {
        self.token_types.len()
    }

    pub fn bos_id(&self) -> Option<u32> {
        self.bos_id
    }

    pub fn eos_id(&self) -> Option<u32> {
        self.eos_id
    }

    /// Whether the model expects BOS in front of a prompt (`tokenizer.ggml.add_bos_token`).
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// EOS and every end-of-turn token in the vocabulary (`<end_of_turn>`, `<|im_end|>`,
    /// `<|eot_id|>` ...), sorted.
    pub fn end_of_generation_ids(&self) -> &[u32] {
        &self.end_of_generation
    }

    pub(super) fn pieces(&self) -> Arc<TokenPieces> {
        Arc::clone(&self.pieces)
    }
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("bos_id", &self.bos_id)
            .field("eos_id", &self.eos_id)
            .field("add_bos", &self.add_bos)
            .field("end_of_generation", &self.end_of_generation)
            .finish_non_exhaustive()
    }
}

/// The vocabulary's texts, an empty one replaced by `[EMPTY_<id>]` as llama.cpp does, so that
/// every token has a distinct, non-empty text to match.
fn token_texts(spec: &TokenizerSpec) -> Vec<String> {
    spec.tokens
        .iter()
        .enumerate()
        .map(|(id, text)| if text.is_empty() { format!("[EMPTY_{id}]") } else { text.clone() })
        .collect()
}
