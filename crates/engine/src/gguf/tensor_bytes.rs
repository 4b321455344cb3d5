//! A tensor's bytes where they lie: one slice of a mapped file, or several for an RDRR
//! tensor that spans shards (each piece whole rows, in order).

use std::{borrow::Cow, ops::Range};

/// The bytes of one tensor, or of a range of its rows, as consecutive pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorBytes<'a> {
    pieces: Vec<&'a [u8]>,
}

impl<'a> TensorBytes<'a> {
    pub(crate) fn new(pieces: Vec<&'a [u8]>) -> TensorBytes<'a> {
        TensorBytes { pieces }
    }

    /// The pieces in order; one unless the tensor spans RDRR shards.
    pub fn pieces(&self) -> &[&'a [u8]] {
        &self.pieces
    }

    pub fn len(&self) -> u64 {
        self.pieces.iter().map(|piece| piece.len() as u64).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes in `range`, or `None` where it runs past the end.
    pub fn slice(&self, range: Range<u64>) -> Option<TensorBytes<'a>> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        let mut pieces = Vec::new();
        let mut piece_start = 0u64;
        for &piece in &self.pieces {
            let piece_end = piece_start + piece.len() as u64;
            let (start, end) = (range.start.max(piece_start), range.end.min(piece_end));
            if start < end {
                pieces.push(&piece[(start - piece_start) as usize..(end - piece_start) as usize]);
            }
            piece_start = piece_end;
        }
        Some(TensorBytes { pieces })
    }

    /// The bytes in one slice: borrowed when they lie in one piece, else gathered into a copy.
    pub fn contiguous(&self) -> Cow<'a, [u8]> {
        match self.pieces[..] {
            [] => Cow::Borrowed(&[]),
            [piece] => Cow::Borrowed(piece),
            _ => Cow::Owned(self.pieces.concat()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_across_pieces_keeps_the_bytes_in_order_without_copying_until_asked() {
        let (first, second, third) = ([0u8, 1, 2, 3], [4u8, 5], [6u8, 7, 8]);
        let bytes = TensorBytes::new(vec![&first, &second, &third]);
        assert_eq!(bytes.len(), 9);
        assert_eq!(bytes.contiguous().as_ref(), &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let middle = bytes.slice(2..7).unwrap();
        assert_eq!(middle.pieces(), &[&[2u8, 3][..], &[4, 5], &[6]]);
        assert!(matches!(bytes.slice(0..4).unwrap().contiguous(), Cow::Borrowed(&[0, 1, 2, 3])));
        assert!(bytes.slice(4..4).unwrap().is_empty());
        assert_eq!(bytes.slice(3..10), None);
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = bytes.slice(5..4);
        assert_eq!(backwards, None);
    }
}
