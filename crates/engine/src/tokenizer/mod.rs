//! Tokenization from a GGUF vocabulary and chat prompt rendering.
//!
//! [`Tokenizer`] rebuilds a model's tokenizer with the `tokenizers` crate from the GGUF
//! `tokenizer.*` metadata — SentencePiece BPE (Gemma) or byte-level BPE (SmolLM2, Llama 3,
//! Qwen 2) — and gives the ids llama.cpp gives. [`StreamDecoder`] turns generated ids into text
//! without splitting characters. [`ChatTemplate`] renders a conversation into a prompt with the
//! model's own Jinja template or a built-in one, and [`encode_chat`] tokenizes it.

mod builtin_templates;
mod byte_alphabet;
mod byte_level;
mod capped_output;
mod chat_message;
mod chat_template;
mod error;
pub mod limits;
mod pieces;
mod pre_tokenizer;
mod sentencepiece;
mod spec;
mod special_tokens;
mod stream_decoder;
mod template_sandbox;
mod text_tokenizer;

#[cfg(test)]
mod test_vocabularies;
#[cfg(test)]
mod tests;

pub use builtin_templates::BuiltinTemplate;
pub use chat_message::{ChatMessage, Role};
pub use chat_template::{encode_chat, ChatTemplate, TemplateError, TemplateOrigin};
pub use error::TokenizerError;
pub use spec::{TokenType, TokenizerModel, TokenizerSpec};
pub use stream_decoder::StreamDecoder;
pub use template_sandbox::{sandbox_chat_templates, TemplateSandbox, RENDERER_ARG};
pub use text_tokenizer::Tokenizer;
