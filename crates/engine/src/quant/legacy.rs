//! ggml's original 32-value block formats. Scales (`d`) and minimums (`m`) are f16 stored as
//! little-endian bytes so every block has alignment 1.

use bytemuck::{Pod, Zeroable};

use super::block::{f16_value, inverse, random_bytes, signed_abs_max, stored_f16, QuantBlock};
use super::rng::SplitMix64;
use crate::gguf::GgmlType;

const QK: usize = 32;

/// x = (q - 8) · d, q in 0..16; byte j holds value j (low nibble) and value j + 16 (high nibble).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ4_0 {
    pub d: [u8; 2],
    pub qs: [u8; QK / 2],
}

/// x = q · d + m, q in 0..16; nibbles as in Q4_0.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ4_1 {
    pub d: [u8; 2],
    pub m: [u8; 2],
    pub qs: [u8; QK / 2],
}

/// x = (q - 16) · d, q in 0..32: low 4 bits in nibbles as Q4_0, bit 4 of value j in bit j of
/// the little-endian u32 `qh`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ5_0 {
    pub d: [u8; 2],
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

/// x = q · d + m, q in 0..32; bits as in Q5_0.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ5_1 {
    pub d: [u8; 2],
    pub m: [u8; 2],
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

/// x = q · d, q in -128..128.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ8_0 {
    pub d: [u8; 2],
    pub qs: [i8; QK],
}

const _: () = assert!(std::mem::size_of::<BlockQ4_0>() == 18);
const _: () = assert!(std::mem::size_of::<BlockQ4_1>() == 20);
const _: () = assert!(std::mem::size_of::<BlockQ5_0>() == 22);
const _: () = assert!(std::mem::size_of::<BlockQ5_1>() == 24);
const _: () = assert!(std::mem::size_of::<BlockQ8_0>() == 34);

/// The 4-bit quants of a 32-value block: value j in the low nibble of byte j, value j + 16 in
/// the high nibble.
pub(super) fn nibble(qs: &[u8; QK / 2], j: usize) -> u8 {
    if j < QK / 2 {
        qs[j] & 0x0F
    } else {
        qs[j - QK / 2] >> 4
    }
}

fn pack_nibbles(quants: &[u8; QK]) -> [u8; QK / 2] {
    std::array::from_fn(|j| (quants[j] & 0x0F) | ((quants[j + QK / 2] & 0x0F) << 4))
}

/// The 5-bit quant of value j: its nibble plus bit j of `qh` as bit 4.
pub(super) fn five_bit(qs: &[u8; QK / 2], qh: [u8; 4], j: usize) -> u8 {
    let high = (u32::from_le_bytes(qh) >> j) & 1;
    nibble(qs, j) | ((high as u8) << 4)
}

fn pack_high_bits(quants: &[u8; QK]) -> [u8; 4] {
    let bits = (0..QK).fold(0u32, |acc, j| acc | (u32::from(quants[j] >> 4 & 1) << j));
    bits.to_le_bytes()
}

/// Quants for a block with range [min, max] mapped onto 0..=levels: (d, m, quants).
fn quantize_affine(values: &[f32], levels: u8) -> ([u8; 2], [u8; 2], [u8; QK]) {
    let min = values.iter().copied().fold(f32::INFINITY, f32::min);
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let (d_bits, d) = stored_f16((max - min) / f32::from(levels));
    let (m_bits, m) = stored_f16(min);
    let id = inverse(d);
    let quants = std::array::from_fn(|j| ((values[j] - m) * id).round().clamp(0.0, f32::from(levels)) as u8);
    (d_bits, m_bits, quants)
}

/// Quants for a symmetric block whose largest-magnitude value maps to level 0 (value -offset):
/// (d, quants in 0..=2·offset-1).
fn quantize_symmetric(values: &[f32], offset: i32) -> ([u8; 2], [u8; QK]) {
    let (d_bits, d) = stored_f16(signed_abs_max(values) / -(offset as f32));
    let id = inverse(d);
    let quants =
        std::array::from_fn(|j| ((values[j] * id).round() as i32 + offset).clamp(0, 2 * offset - 1) as u8);
    (d_bits, quants)
}

/// A random scale so that `levels` steps of it span about [-1, 1]·amplitude, amplitude in [0.5, 1).
fn random_step(rng: &mut SplitMix64, levels: f32) -> f32 {
    2.0 * rng.uniform(0.5, 1.0) / levels
}

impl QuantBlock for BlockQ4_0 {
    const TYPE: GgmlType = GgmlType::Q4_0;
    const LEN: usize = QK;

    fn dequantize(&self, out: &mut [f32]) {
        let d = f16_value(self.d);
        for (j, x) in out.iter_mut().enumerate() {
            *x = (i32::from(nibble(&self.qs, j)) - 8) as f32 * d;
        }
    }

    fn quantize(values: &[f32]) -> Self {
        let (d, quants) = quantize_symmetric(values, 8);
        BlockQ4_0 { d, qs: pack_nibbles(&quants) }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        BlockQ4_0 { d: stored_f16(random_step(rng, 16.0)).0, qs: random_bytes(rng) }
    }
}

impl QuantBlock for BlockQ4_1 {
    const TYPE: GgmlType = GgmlType::Q4_1;
    const LEN: usize = QK;

    fn dequantize(&self, out: &mut [f32]) {
        let (d, m) = (f16_value(self.d), f16_value(self.m));
        for (j, x) in out.iter_mut().enumerate() {
            *x = f32::from(nibble(&self.qs, j)) * d + m;
        }
    }

    fn quantize(values: &[f32]) -> Self {
        let (d, m, quants) = quantize_affine(values, 15);
        BlockQ4_1 { d, m, qs: pack_nibbles(&quants) }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        let step = random_step(rng, 15.0);
        BlockQ4_1 {
            d: stored_f16(step).0,
            m: stored_f16(-rng.uniform(6.5, 8.5) * step).0,
            qs: random_bytes(rng),
        }
    }
}

impl QuantBlock for BlockQ5_0 {
    const TYPE: GgmlType = GgmlType::Q5_0;
    const LEN: usize = QK;

    fn dequantize(&self, out: &mut [f32]) {
        let d = f16_value(self.d);
        for (j, x) in out.iter_mut().enumerate() {
            *x = (i32::from(five_bit(&self.qs, self.qh, j)) - 16) as f32 * d;
        }
    }

    fn quantize(values: &[f32]) -> Self {
        let (d, quants) = quantize_symmetric(values, 16);
        BlockQ5_0 { d, qh: pack_high_bits(&quants), qs: pack_nibbles(&quants) }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        BlockQ5_0 { d: stored_f16(random_step(rng, 32.0)).0, qh: random_bytes(rng), qs: random_bytes(rng) }
    }
}

impl QuantBlock for BlockQ5_1 {
    const TYPE: GgmlType = GgmlType::Q5_1;
    const LEN: usize = QK;

    fn dequantize(&self, out: &mut [f32]) {
        let (d, m) = (f16_value(self.d), f16_value(self.m));
        for (j, x) in out.iter_mut().enumerate() {
            *x = f32::from(five_bit(&self.qs, self.qh, j)) * d + m;
        }
    }

    fn quantize(values: &[f32]) -> Self {
        let (d, m, quants) = quantize_affine(values, 31);
        BlockQ5_1 { d, m, qh: pack_high_bits(&quants), qs: pack_nibbles(&quants) }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        let step = random_step(rng, 31.0);
        BlockQ5_1 {
            d: stored_f16(step).0,
            m: stored_f16(-rng.uniform(13.5, 17.5) * step).0,
            qh: random_bytes(rng),
            qs: random_bytes(rng),
        }
    }
}

impl QuantBlock for BlockQ8_0 {
    const TYPE: GgmlType = GgmlType::Q8_0;
    const LEN: usize = QK;

    fn dequantize(&self, out: &mut [f32]) {
        let d = f16_value(self.d);
        for (x, &q) in out.iter_mut().zip(&self.qs) {
            *x = f32::from(q) * d;
        }
    }

    fn quantize(values: &[f32]) -> Self {
        let amax = values.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let (d_bits, d) = stored_f16(amax / 127.0);
        let id = inverse(d);
        BlockQ8_0 {
            d: d_bits,
            qs: std::array::from_fn(|j| (values[j] * id).round().clamp(-127.0, 127.0) as i8),
        }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        BlockQ8_0 { d: stored_f16(random_step(rng, 256.0)).0, qs: bytemuck::cast(random_bytes::<QK>(rng)) }
    }
}

#[cfg(test)]
mod tests {
    //! Hand-built blocks with known scales and quants: these pin the bit layouts.
    use super::*;
    use crate::quant::block::f16_bits;

    fn dequantized<B: QuantBlock>(block: B) -> Vec<f32> {
        let mut out = vec![0.0; B::LEN];
        block.dequantize(&mut out);
        out
    }

    #[test]
    fn q4_0_low_nibbles_are_the_first_half() {
        let mut qs = [0x88u8; 16]; // every quant 8 -> 0.0
        qs[0] = 0x3F; // value 0: 15 -> 7·d; value 16: 3 -> -5·d
        qs[15] = 0x0_1; // value 15: 1 -> -7·d; value 31: 0 -> -8·d
        let out = dequantized(BlockQ4_0 { d: f16_bits(0.5), qs });
        assert_eq!(out[0], 3.5);
        assert_eq!(out[16], -2.5);
        assert_eq!(out[15], -3.5);
        assert_eq!(out[31], -4.0);
        assert_eq!(out[1], 0.0);
    }

    #[test]
    fn q4_1_adds_the_minimum() {
        let mut qs = [0u8; 16];
        qs[2] = 0xA5; // value 2: 5, value 18: 10
        let out = dequantized(BlockQ4_1 { d: f16_bits(0.25), m: f16_bits(-1.0), qs });
        assert_eq!(out[2], 5.0 * 0.25 - 1.0);
        assert_eq!(out[18], 10.0 * 0.25 - 1.0);
        assert_eq!(out[0], -1.0);
    }

    #[test]
    fn q5_0_high_bit_j_belongs_to_value_j() {
        let mut qs = [0u8; 16];
        qs[1] = 0x72; // value 1: low 2, value 17: low 7
                      // qh bit 1 (value 1) and bit 17 (value 17) and bit 31 (value 31) set.
        let qh = ((1u32 << 1) | (1 << 17) | (1 << 31)).to_le_bytes();
        let out = dequantized(BlockQ5_0 { d: f16_bits(2.0), qh, qs });
        assert_eq!(out[1], ((2 | 16) - 16) as f32 * 2.0); // 4
        assert_eq!(out[17], ((7 | 16) - 16) as f32 * 2.0); // 14
        assert_eq!(out[31], (16 - 16) as f32 * 2.0);
        assert_eq!(out[0], -32.0);
        assert_eq!(out[16], -32.0);
    }

    #[test]
    fn q5_1_high_bits_and_minimum() {
        let mut qs = [0u8; 16];
        qs[0] = 0xF1; // value 0: 1, value 16: 15
        let qh = (1u32 << 16).to_le_bytes();
        let out = dequantized(BlockQ5_1 { d: f16_bits(0.5), m: f16_bits(1.0), qh, qs });
        assert_eq!(out[0], 1.0 * 0.5 + 1.0);
        assert_eq!(out[16], 31.0 * 0.5 + 1.0);
        assert_eq!(out[1], 1.0);
    }

    #[test]
    fn q8_0_is_signed() {
        let mut qs = [0i8; 32];
        qs[0] = -128;
        qs[31] = 127;
        qs[7] = -3;
        let out = dequantized(BlockQ8_0 { d: f16_bits(0.125), qs });
        assert_eq!((out[0], out[31], out[7], out[8]), (-16.0, 15.875, -0.375, 0.0));
    }
}
