//! Small hand-made vocabularies in the shapes of Gemma's and SmolLM2's, for tests that must not
//! depend on model files.

use super::{TokenType, TokenizerModel, TokenizerSpec};

pub(super) const SP_BOS: u32 = 2;
pub(super) const SP_EOS: u32 = 1;
pub(super) const SP_START_OF_TURN: u32 = 4;
pub(super) const SP_END_OF_TURN: u32 = 5;
pub(super) const SP_NEWLINE: u32 = 6;
pub(super) const SP_TWO_SPACES: u32 = 7;
/// `<0x00>`; byte `b` is `SP_FIRST_BYTE + b`.
pub(super) const SP_FIRST_BYTE: u32 = 8;

/// Normal tokens, highest score first, so each merge below happens before the ones after it.
const SP_PIECES: [&str; 18] = [
    "▁", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "hell", "hello", "▁w", "or", "▁wor", "ld", "▁world",
    "x",
];

/// A Gemma-like SentencePiece vocabulary: control tokens, user-defined whitespace, 256 byte
/// tokens, then normal pieces with descending scores; no space prefix, BOS added.
pub(super) fn sentencepiece_spec() -> TokenizerSpec {
    let mut tokens: Vec<String> =
        ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"].map(String::from).into();
    let mut token_types = vec![TokenType::Control; tokens.len()];
    for whitespace in ["\n", "  "] {
        tokens.push(whitespace.to_string());
        token_types.push(TokenType::UserDefined);
    }
    for byte in 0..=255u8 {
        tokens.push(format!("<0x{byte:02X}>"));
        token_types.push(TokenType::Byte);
    }
    let mut scores = vec![0.0; tokens.len()];
    for (rank, piece) in SP_PIECES.iter().enumerate() {
        tokens.push(piece.to_string());
        token_types.push(TokenType::Normal);
        scores.push(-(rank as f32));
    }
    TokenizerSpec {
        model: TokenizerModel::SentencePiece,
        pre: Some("default".into()),
        tokens,
        scores,
        token_types,
        merges: Vec::new(),
        bos_id: Some(SP_BOS),
        eos_id: Some(SP_EOS),
        eot_id: None,
        unk_id: Some(3),
        pad_id: Some(0),
        add_bos: true,
        add_space_prefix: false,
        chat_template: None,
    }
}

/// The id of a normal piece of [`sentencepiece_spec`].
pub(super) fn sp_piece(piece: &str) -> u32 {
    let rank = SP_PIECES.iter().position(|&p| p == piece).expect("piece in SP_PIECES");
    SP_FIRST_BYTE + 256 + rank as u32
}

pub(super) const BL_END_OF_TEXT: u32 = 0;
pub(super) const BL_IM_START: u32 = 1;
pub(super) const BL_IM_END: u32 = 2;
/// The character of byte `b` is token `BL_FIRST_BYTE + b`.
pub(super) const BL_FIRST_BYTE: u32 = 3;

const BL_MERGES: [&str; 9] = ["h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"];

/// GPT-2's byte alphabet, written out independently of the decoder's reverse table.
pub(super) fn byte_level_char(byte: u8) -> char {
    let printable = |b: u8| matches!(b, 33..=126 | 161..=172 | 174..=255);
    if printable(byte) {
        return char::from(byte);
    }
    let index = (0..byte).filter(|&b| !printable(b)).count() as u32;
    char::from_u32(256 + index).expect("below U+0144")
}

/// A SmolLM2-like byte-level BPE vocabulary: three control tokens, every byte, then the merges'
/// results; `smollm` pre-tokenizer, no BOS added.
pub(super) fn byte_level_spec() -> TokenizerSpec {
    let mut tokens: Vec<String> = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"].map(String::from).into();
    let mut token_types = vec![TokenType::Control; tokens.len()];
    for byte in 0..=255u8 {
        tokens.push(byte_level_char(byte).to_string());
        token_types.push(TokenType::Normal);
    }
    for merge in BL_MERGES {
        tokens.push(merge.replace(' ', ""));
        token_types.push(TokenType::Normal);
    }
    TokenizerSpec {
        model: TokenizerModel::ByteLevelBpe,
        pre: Some("smollm".into()),
        tokens,
        scores: Vec::new(),
        token_types,
        merges: BL_MERGES.map(String::from).into(),
        bos_id: Some(BL_IM_START),
        eos_id: Some(BL_IM_END),
        eot_id: None,
        unk_id: Some(BL_END_OF_TEXT),
        pad_id: None,
        add_bos: false,
        add_space_prefix: false,
        chat_template: None,
    }
}

/// The id of the token a merge of [`byte_level_spec`] produces, e.g. `"Ġworld"`.
pub(super) fn bl_merged(text: &str) -> u32 {
    let index = BL_MERGES.iter().position(|m| m.replace(' ', "") == text).expect("a merge result");
    BL_FIRST_BYTE + 256 + index as u32
}
