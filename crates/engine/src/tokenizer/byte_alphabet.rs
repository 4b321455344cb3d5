//! GPT-2's byte alphabet: byte-level BPE vocabularies spell every byte as a visible character.
//! Printable bytes map to the character of the same code and the other 68 bytes, in order, to
//! U+0100 onwards.

const fn is_printable_byte(byte: u8) -> bool {
    matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

const UNPRINTABLE_BYTES: [u8; 68] = {
    let mut table = [0u8; 68];
    let mut next = 0;
    let mut byte = 0usize;
    while byte < 256 {
        if !is_printable_byte(byte as u8) {
            table[next] = byte as u8;
            next += 1;
        }
        byte += 1;
    }
    table
};

/// The byte a character of the alphabet stands for.
pub(super) fn byte_for_char(c: char) -> Option<u8> {
    let code = c as u32;
    match u8::try_from(code) {
        Ok(byte) if is_printable_byte(byte) => Some(byte),
        Ok(_) => None,
        Err(_) => code.checked_sub(256).and_then(|index| UNPRINTABLE_BYTES.get(index as usize).copied()),
    }
}

/// The character that stands for `byte`.
pub(super) fn char_for_byte(byte: u8) -> char {
    if is_printable_byte(byte) {
        return char::from(byte);
    }
    let index = UNPRINTABLE_BYTES.iter().position(|&b| b == byte).expect("every byte is printable or listed");
    char::from_u32(256 + index as u32).expect("U+0100..U+0144 are characters")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_alphabet_covers_every_byte_once() {
        let mut seen = [false; 256];
        for code in 0..(256 + 68) {
            if let Some(byte) = char::from_u32(code).and_then(byte_for_char) {
                assert!(!seen[byte as usize], "byte {byte} reached twice");
                seen[byte as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(byte_for_char('Ġ'), Some(b' '));
        assert_eq!(byte_for_char('Ċ'), Some(b'\n'));
        assert_eq!(byte_for_char('a'), Some(b'a'));
        assert_eq!(byte_for_char(' '), None);
    }

    #[test]
    fn char_for_byte_inverts_byte_for_char() {
        for byte in 0..=255u8 {
            assert_eq!(byte_for_char(char_for_byte(byte)), Some(byte));
        }
        assert_eq!(char_for_byte(b' '), 'Ġ');
    }
}
