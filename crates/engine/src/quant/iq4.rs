//! ggml's non-linear 4-bit formats: each nibble indexes [`IQ4_VALUES`], a table denser near
//! zero, as weights are. A 32-value block keeps value j in the low nibble of byte j (j < 16)
//! or the high nibble of byte j - 16, as Q4_0 does.
//!
//! IQ4_NL: 32-value blocks, x = d·table[q].
//! IQ4_XS: 256-value super-blocks of eight such blocks (without their own d), each with a
//! 6-bit scale: x = d·(ls - 32)·table[q].

use bytemuck::{Pod, Zeroable};

use super::block::{f16_value, inverse, random_bytes, signed_abs_max, stored_f16, QuantBlock};
use super::k_quants::stored_f16_covering;
use super::legacy::nibble;
use super::rng::SplitMix64;
use crate::gguf::GgmlType;

/// ggml's `kvalues_iq4nl`.
pub const IQ4_VALUES: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

const QK: usize = 32;
const QK_K: usize = 256;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockIq4Nl {
    pub d: [u8; 2],
    pub qs: [u8; QK / 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockIq4Xs {
    pub d: [u8; 2],
    /// Bits 2b..2b+1 (little-endian u16) are the high bits of block b's scale.
    pub scales_h: [u8; 2],
    /// Nibble b (low nibble of byte b/2 first) is the low 4 bits of block b's scale.
    pub scales_l: [u8; QK_K / 64],
    /// Block b's nibbles in bytes 16b..16b+16.
    pub qs: [u8; QK_K / 2],
}

const _: () = assert!(std::mem::size_of::<BlockIq4Nl>() == 18);
const _: () = assert!(std::mem::size_of::<BlockIq4Xs>() == 136);

/// The index of the entry of `table` nearest `scaled`.
fn nearest_index(table: &[i8; 16], scaled: f32) -> u8 {
    let distance = |k: usize| (f32::from(table[k]) - scaled).abs();
    (0..16).min_by(|&a, &b| distance(a).total_cmp(&distance(b))).expect("16 entries") as u8
}

/// Rounds each value of a 32-value block to the nearest entry of `table` times `scale`,
/// returning the nibbles in Q4_0's layout.
pub(super) fn pack_nearest(table: &[i8; 16], values: &[f32], scale: f32) -> [u8; QK / 2] {
    let inv = inverse(scale);
    let quants: [u8; QK] = std::array::from_fn(|j| nearest_index(table, values[j] * inv));
    std::array::from_fn(|j| quants[j] | (quants[j + QK / 2] << 4))
}

/// x = scale·table[nibble j] for a 32-value block of nibbles in Q4_0's layout.
pub(super) fn dequantize_table_block(table: &[i8; 16], qs: &[u8; QK / 2], scale: f32, out: &mut [f32]) {
    for (j, x) in out.iter_mut().enumerate() {
        *x = scale * f32::from(table[usize::from(nibble(qs, j))]);
    }
}

impl BlockIq4Xs {
    /// Block b's 6-bit scale, 0..64 (before subtracting 32).
    fn scale(&self, b: usize) -> u8 {
        let low = (self.scales_l[b / 2] >> (4 * (b % 2))) & 0x0F;
        let high = (u16::from_le_bytes(self.scales_h) >> (2 * b)) & 3;
        low | ((high as u8) << 4)
    }

    fn with_scales(d: [u8; 2], levels: &[u8; 8], qs: [u8; QK_K / 2]) -> Self {
        let scales_h = (0..8).fold(0u16, |acc, b| acc | (u16::from(levels[b] >> 4) << (2 * b)));
        let scales_l = std::array::from_fn(|i| (levels[2 * i] & 0x0F) | ((levels[2 * i + 1] & 0x0F) << 4));
        BlockIq4Xs { d, scales_h: scales_h.to_le_bytes(), scales_l, qs }
    }
}

impl QuantBlock for BlockIq4Nl {
    const TYPE: GgmlType = GgmlType::IQ4_NL;
    const LEN: usize = QK;

    fn dequantize(&self, out: &mut [f32]) {
        dequantize_table_block(&IQ4_VALUES, &self.qs, f16_value(self.d), out);
    }

    /// The largest-magnitude value maps to the table's -127 end, as in ggml.
    fn quantize(values: &[f32]) -> Self {
        let (d_bits, d) = stored_f16(signed_abs_max(values) / f32::from(IQ4_VALUES[0]));
        BlockIq4Nl { d: d_bits, qs: pack_nearest(&IQ4_VALUES, values, d) }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        BlockIq4Nl { d: stored_f16(rng.uniform(0.5, 1.0) / 127.0).0, qs: random_bytes(rng) }
    }
}

impl QuantBlock for BlockIq4Xs {
    const TYPE: GgmlType = GgmlType::IQ4_XS;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        let d = f16_value(self.d);
        for (b, values) in out.chunks_exact_mut(QK).enumerate() {
            let scale = d * (i32::from(self.scale(b)) - 32) as f32;
            let qs: &[u8; QK / 2] = self.qs[16 * b..16 * b + 16].try_into().expect("16 bytes");
            dequantize_table_block(&IQ4_VALUES, qs, scale, values);
        }
    }

    /// Each block's wanted scale maps its largest-magnitude value to -127; d is chosen so
    /// 32 steps cover the largest of those, and each block's scale rounds to a step.
    fn quantize(values: &[f32]) -> Self {
        let wanted: Vec<f32> =
            values.chunks_exact(QK).map(|xs| signed_abs_max(xs) / f32::from(IQ4_VALUES[0])).collect();
        let (d_bits, d) = stored_f16_covering(wanted.iter().fold(0.0f32, |a, w| a.max(w.abs())), 32.0);
        let levels: [u8; 8] =
            std::array::from_fn(|b| ((wanted[b] * inverse(d)).round().clamp(-32.0, 31.0) as i32 + 32) as u8);
        let mut qs = [0u8; QK_K / 2];
        for (b, (chunk, xs)) in qs.chunks_exact_mut(16).zip(values.chunks_exact(QK)).enumerate() {
            chunk.copy_from_slice(&pack_nearest(&IQ4_VALUES, xs, d * (i32::from(levels[b]) - 32) as f32));
        }
        BlockIq4Xs::with_scales(d_bits, &levels, qs)
    }

    /// Scales of magnitude 16..=31 and either sign.
    fn random(rng: &mut SplitMix64) -> Self {
        let amplitude = rng.uniform(0.5, 1.0);
        let levels: [u8; 8] = std::array::from_fn(|_| (32 + rng.signed(16, 31)) as u8);
        BlockIq4Xs::with_scales(stored_f16(amplitude / (32.0 * 127.0)).0, &levels, random_bytes(rng))
    }
}

#[cfg(test)]
mod tests {
    //! Hand-built blocks with known scales and quants: these pin the bit layouts.
    use super::*;
    use crate::quant::block::{dequantized, f16_bits};

    #[test]
    fn iq4_nl_nibbles_index_the_table() {
        let mut qs = [0x88u8; 16]; // index 8: value 1
        qs[0] = 0xF_0; // value 0: -127, value 16: 113
        qs[15] = 0x3_7; // value 15: -10, value 31: -65
        let out = dequantized(&BlockIq4Nl { d: f16_bits(0.5), qs });
        assert_eq!((out[0], out[16], out[15], out[31], out[1]), (-63.5, 56.5, -5.0, -32.5, 0.5));
    }

    #[test]
    fn iq4_xs_block_scales() {
        let mut levels = [32u8; 8];
        levels[0] = 34; // scale 2
        levels[5] = 0b10_0001; // 33: scale 1
        levels[7] = 0; // scale -32
        let mut qs = [0x88u8; 128];
        qs[16 * 5 + 3] = 0xE_1; // block 5: value 3: -104, value 19: 89
        qs[16 * 7] = 0x0_F; // block 7: value 0: 113
        let block = BlockIq4Xs::with_scales(f16_bits(0.25), &levels, qs);
        assert_eq!((0..8).map(|b| block.scale(b)).collect::<Vec<_>>(), levels);
        let out = dequantized(&block);
        assert_eq!(out[0], 0.25 * 2.0);
        assert_eq!(out[32], 0.0);
        assert_eq!(out[160 + 3], 0.25 * -104.0);
        assert_eq!(out[160 + 19], 0.25 * 89.0);
        assert_eq!(out[224], 0.25 * -32.0 * 113.0);
    }
}
