//! Which tokens are cut out of raw text whole, and which end a generation.

use tokenizers::AddedToken;

use super::{TokenType, TokenizerSpec};

/// Tokens that end a turn in the chat formats llama.cpp knows. GGUF files rarely name them in
/// metadata, so, like llama.cpp, they are found by their text. Gemma's `<eos>` is here because an
/// instruction-tuned Gemma GGUF names `<end_of_turn>` as EOS, yet the model may still end with `<eos>`
/// (its generation config stops at both).
const END_OF_TURN_TEXTS: [&str; 10] = [
    "<eos>",
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "<|return|>",
    "<|call|>",
];

/// gpt-oss's harmony format ends the answer with `<|return|>` or a tool call with `<|call|>`;
/// its `<|end|>` only closes one message (the analysis channel) inside the answer, so a
/// vocabulary with both of those does not stop at `<|end|>` (Phi-3's `<|end|>` still does).
fn ends_generation(text: &str, tokens: &[String]) -> bool {
    if text == "<|end|>" {
        let harmony = ["<|return|>", "<|call|>"].iter().all(|marker| tokens.iter().any(|t| t == marker));
        return !harmony;
    }
    END_OF_TURN_TEXTS.contains(&text)
}

/// The token types the tokenizer works with: those of the spec, except that end-of-turn tokens
/// mistyped as normal are treated as control tokens (as llama.cpp does), so they match whole.
pub(super) fn effective_token_types(spec: &TokenizerSpec) -> Vec<TokenType> {
    (0..spec.tokens.len())
        .map(|id| {
            if END_OF_TURN_TEXTS.contains(&spec.tokens[id].as_str()) {
                TokenType::Control
            } else {
                spec.token_type(id)
            }
        })
        .collect()
}

/// Control, unknown and user-defined tokens as `tokenizers` added tokens, matched on the raw
/// text before normalization: GGUF stores user-defined tokens already normalized (Gemma's
/// whitespace runs are written with spaces, not '▁'), and llama.cpp matches them on the raw text.
pub(super) fn added_tokens(texts: &[String], types: &[TokenType]) -> Vec<AddedToken> {
    texts
        .iter()
        .zip(types)
        .filter(|(_, kind)| kind.matches_whole())
        .map(|(text, &kind)| {
            AddedToken::from(text.as_str(), kind != TokenType::UserDefined).normalized(false)
        })
        .collect()
}

/// EOS, the named end-of-turn token, and every end-of-turn token found by its text; sorted, unique.
pub(super) fn end_of_generation_ids(spec: &TokenizerSpec) -> Vec<u32> {
    let by_text = spec
        .tokens
        .iter()
        .enumerate()
        .filter(|(_, text)| ends_generation(text, &spec.tokens))
        .map(|(id, _)| id as u32);
    let mut ids: Vec<u32> = spec.eos_id.into_iter().chain(spec.eot_id).chain(by_text).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}
