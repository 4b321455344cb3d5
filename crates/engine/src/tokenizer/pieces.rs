//! The raw bytes each token stands for, which is what decoding concatenates.

use super::byte_alphabet::byte_for_char;
use super::{TokenType, TokenizerModel};

/// Every token's bytes in one buffer: `bytes[ends[id - 1]..ends[id]]`.
#[derive(Debug)]
pub(super) struct TokenPieces {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl TokenPieces {
    /// Follows llama.cpp's `token_to_piece` with special tokens rendered: normal tokens are
    /// un-escaped ('▁' to space for SentencePiece, the GPT-2 byte alphabet reversed for byte-level
    /// BPE), byte tokens become their byte, control and user-defined tokens keep their text, and
    /// unused or undefined tokens stand for nothing.
    pub(super) fn new(model: TokenizerModel, texts: &[String], types: &[TokenType]) -> TokenPieces {
        let mut bytes = Vec::with_capacity(texts.iter().map(String::len).sum());
        let mut ends = Vec::with_capacity(texts.len());
        for (text, &kind) in texts.iter().zip(types) {
            match kind {
                TokenType::Normal => match model {
                    TokenizerModel::SentencePiece => {
                        bytes.extend_from_slice(text.replace('▁', " ").as_bytes())
                    }
                    TokenizerModel::ByteLevelBpe => push_byte_level(&mut bytes, text),
                },
                TokenType::Byte => match parse_byte_token(text) {
                    Some(byte) => bytes.push(byte),
                    None => bytes.extend_from_slice(text.as_bytes()),
                },
                TokenType::Control | TokenType::UserDefined | TokenType::Unknown => {
                    bytes.extend_from_slice(text.as_bytes())
                }
                TokenType::Unused | TokenType::Undefined => {}
            }
            ends.push(bytes.len());
        }
        TokenPieces { bytes, ends }
    }

    /// The token's bytes; empty for an id outside the vocabulary.
    pub(super) fn get(&self, id: u32) -> &[u8] {
        let id = id as usize;
        match self.ends.get(id) {
            Some(&end) => {
                let start = if id == 0 { 0 } else { self.ends[id - 1] };
                &self.bytes[start..end]
            }
            None => &[],
        }
    }
}

/// `<0xAB>` → 0xAB.
fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// Appends the bytes a byte-level BPE token's characters stand for; a character outside the
/// GPT-2 byte alphabet (malformed vocabulary) is kept as its own UTF-8.
fn push_byte_level(out: &mut Vec<u8>, text: &str) {
    for c in text.chars() {
        match byte_for_char(c) {
            Some(byte) => out.push(byte),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_follow_token_types() {
        let texts: Vec<String> =
            ["▁hi", "<0x0A>", "<bos>", "  ", "<unused0>", "<0xZZ>"].map(String::from).into();
        let types = [
            TokenType::Normal,
            TokenType::Byte,
            TokenType::Control,
            TokenType::UserDefined,
            TokenType::Unused,
            TokenType::Byte,
        ];
        let pieces = TokenPieces::new(TokenizerModel::SentencePiece, &texts, &types);
        assert_eq!(pieces.get(0), b" hi");
        assert_eq!(pieces.get(1), b"\n");
        assert_eq!(pieces.get(2), b"<bos>");
        assert_eq!(pieces.get(3), b"  ");
        assert_eq!(pieces.get(4), b"");
        assert_eq!(pieces.get(5), b"<0xZZ>");
        assert_eq!(pieces.get(6), b"");

        let texts: Vec<String> = ["ĠcafÃ©", "<|im_end|>"].map(String::from).into();
        let pieces =
            TokenPieces::new(TokenizerModel::ByteLevelBpe, &texts, &[TokenType::Normal, TokenType::Control]);
        assert_eq!(pieces.get(0), " café".as_bytes());
        assert_eq!(pieces.get(1), b"<|im_end|>");
    }
}
