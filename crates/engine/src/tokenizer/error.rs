use crate::gguf::GgufError;

/// Why a tokenizer could not be built from a model's vocabulary, or could not encode a text.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("reading the tokenizer metadata: {0}")]
    Metadata(#[from] GgufError),
    #[error("the model has no '{key}' metadata, which a tokenizer needs")]
    MissingKey { key: &'static str },
    #[error("tokenizer model '{0}' is not supported (supported: 'llama' for SentencePiece, 'gpt2' for byte-level BPE)")]
    UnsupportedModel(String),
    #[error("pre-tokenizer '{0}' is not supported (supported: {supported})", supported = super::pre_tokenizer::SUPPORTED_NAMES)]
    UnsupportedPreTokenizer(String),
    #[error("'{key}' has {count} entries, over the limit of {limit}")]
    TooMany { key: &'static str, count: usize, limit: usize },
    #[error("token {id} is {len} bytes long, over the limit of {limit}")]
    TokenTooLong { id: usize, len: usize, limit: usize },
    #[error("the SentencePiece vocabulary is too costly to build: splitting its tokens would hash {work} bytes (limit {limit}); its tokens are too long or share too-long prefixes")]
    SplitWorkTooLarge { work: u64, limit: u64 },
    #[error("the vocabulary is empty")]
    EmptyVocabulary,
    #[error("'{key}' has {found} entries but the vocabulary has {expected} tokens")]
    LengthMismatch { key: &'static str, expected: usize, found: usize },
    #[error("'{key}' is token {id}, outside the vocabulary of {vocab_size} tokens")]
    TokenIdOutOfRange { key: &'static str, id: u32, vocab_size: usize },
    #[error("the model asks for a BOS token but names none")]
    MissingBos,
    #[error("building the {model} tokenizer: {source}")]
    Build {
        model: &'static str,
        #[source]
        source: tokenizers::Error,
    },
    #[error("encoding text: {0}")]
    Encode(#[source] tokenizers::Error),
}
