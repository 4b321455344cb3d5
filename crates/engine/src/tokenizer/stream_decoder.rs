use std::sync::Arc;

use super::pieces::TokenPieces;
use super::Tokenizer;

/// Turns generated tokens into text as they arrive. A token can end inside a UTF-8 character
/// (byte-fallback tokens spell a character one byte at a time, byte-level BPE tokens split
/// characters too), so the bytes of an unfinished character are held back until the token that
/// completes it.
///
/// Owns what it needs from the tokenizer, so it can live across calls that borrow the model.
#[derive(Debug)]
pub struct StreamDecoder {
    pieces: Arc<TokenPieces>,
    /// Bytes of a character still incomplete: at most 3.
    pending: Vec<u8>,
}

impl StreamDecoder {
    pub fn new(tokenizer: &Tokenizer) -> StreamDecoder {
        StreamDecoder { pieces: tokenizer.pieces(), pending: Vec::new() }
    }

    /// The text that `id` completes. Bytes that can never become valid UTF-8 come out as U+FFFD
    /// right away; only a valid but unfinished character is held back.
    pub fn push(&mut self, id: u32) -> String {
        self.pending.extend_from_slice(self.pieces.get(id));
        let mut text = String::new();
        let mut rest = self.pending.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    rest = &[];
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    text.push_str(std::str::from_utf8(valid).expect("checked by from_utf8"));
                    match error.error_len() {
                        Some(invalid_len) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[invalid_len..];
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        text
    }

    /// Whatever is still held back: an unfinished character at the end of generation is
    /// written as U+FFFD.
    pub fn finish(&mut self) -> String {
        let tail = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        tail
    }
}
