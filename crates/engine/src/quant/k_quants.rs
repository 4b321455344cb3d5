//! ggml's 256-value super-block "K" formats.
//!
//! Q4_K/Q5_K: eight 32-value sub-blocks, each with a 6-bit scale and 6-bit min packed into
//! 12 bytes; x = d·sc·q - dmin·m. Q6_K: sixteen 16-value sub-blocks with i8 scales;
//! x = d·sc·(q - 32).

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::block::{f16_value, inverse, random_bytes, stored_f16, QuantBlock};
use super::rng::SplitMix64;
use crate::gguf::GgmlType;

const QK_K: usize = 256;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ4K {
    pub d: [u8; 2],
    pub dmin: [u8; 2],
    /// Eight 6-bit scales and eight 6-bit mins; see [`unpack_scale_min`].
    pub scales: [u8; 12],
    /// Chunk c (64 values) uses bytes 32c..32c+32: low nibbles are values 64c..64c+32,
    /// high nibbles values 64c+32..64c+64.
    pub qs: [u8; QK_K / 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ5K {
    pub d: [u8; 2],
    pub dmin: [u8; 2],
    pub scales: [u8; 12],
    /// Bit 4 of value i (sub-block j = i / 32, l = i % 32) is bit j of `qh[l]`.
    pub qh: [u8; QK_K / 8],
    /// Low 4 bits, laid out as Q4_K's `qs`.
    pub qs: [u8; QK_K / 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ6K {
    /// Low 4 bits. Half h (128 values) uses bytes 64h..64h+64: for l < 32, byte 64h+l holds
    /// values l (low nibble) and l+64 (high); byte 64h+32+l holds values l+32 and l+96.
    pub ql: [u8; QK_K / 2],
    /// High 2 bits: byte 32h+l holds values l, l+32, l+64, l+96 of half h in bits 0-1, 2-3, 4-5, 6-7.
    pub qh: [u8; QK_K / 4],
    /// Scale of each 16-value sub-block.
    pub scales: [i8; QK_K / 16],
    pub d: [u8; 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ4K>() == 144);
const _: () = assert!(std::mem::size_of::<BlockQ5K>() == 176);
const _: () = assert!(std::mem::size_of::<BlockQ6K>() == 210);

/// Scale and min of sub-block `j` (ggml's `get_scale_min_k4`): sub-blocks 0-3 keep theirs in
/// the low 6 bits of bytes j and j+4; sub-blocks 4-7 split theirs into a nibble in byte j+4
/// and 2 bits in the top of bytes j-4 (scale) and j (min).
pub fn unpack_scale_min(scales: &[u8; 12], j: usize) -> (u8, u8) {
    if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        ((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4), (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))
    }
}

fn pack_scale_min(sc: &[u8; 8], m: &[u8; 8]) -> [u8; 12] {
    let mut packed = [0u8; 12];
    for j in 0..4 {
        packed[j] = sc[j] | ((sc[j + 4] >> 4) << 6);
        packed[j + 4] = m[j] | ((m[j + 4] >> 4) << 6);
        packed[j + 8] = (sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4);
    }
    packed
}

/// Value i's low 4 bits in the Q4_K/Q5_K nibble layout.
fn k_nibble(qs: &[u8; QK_K / 2], i: usize) -> u8 {
    let (chunk, within) = (i / 64, i % 64);
    let byte = qs[32 * chunk + within % 32];
    if within < 32 {
        byte & 0x0F
    } else {
        byte >> 4
    }
}

fn pack_k_nibbles(quants: &[u8; QK_K]) -> [u8; QK_K / 2] {
    std::array::from_fn(|b| {
        let (chunk, l) = (b / 32, b % 32);
        (quants[64 * chunk + l] & 0x0F) | ((quants[64 * chunk + 32 + l] & 0x0F) << 4)
    })
}

fn dequantize_scaled_min(
    d: [u8; 2],
    dmin: [u8; 2],
    scales: &[u8; 12],
    quant: impl Fn(usize) -> u8,
    out: &mut [f32],
) {
    let (d, dmin) = (f16_value(d), f16_value(dmin));
    for (j, values) in out.chunks_exact_mut(32).enumerate() {
        let (sc, m) = unpack_scale_min(scales, j);
        let (scale, min) = (d * f32::from(sc), dmin * f32::from(m));
        for (l, x) in values.iter_mut().enumerate() {
            *x = scale * f32::from(quant(32 * j + l)) - min;
        }
    }
}

/// The smallest f16 with `limit` steps of it covering `value` (>= 0), as stored bits and value.
/// Rounding up matters most for f16 subnormals, whose absolute step of 2^-24 is large
/// relative to the tiny scales of near-zero blocks.
pub(super) fn stored_f16_covering(value: f32, limit: f32) -> ([u8; 2], f32) {
    let mut scale = f16::from_f32(value / limit);
    while scale.to_f32() * limit < value && scale.is_finite() {
        scale = f16::from_bits(scale.to_bits() + 1);
    }
    (scale.to_le_bytes(), scale.to_f32())
}

/// The 6-bit multiple of `unit` that covers `needed`, clamped to 0..=max.
pub(super) fn covering_level(needed: f32, unit: f32, max: u8) -> u8 {
    (needed * inverse(unit)).ceil().clamp(0.0, f32::from(max)) as u8
}

/// A super-block quantized as x = d·sc·q - dmin·m per sub-block.
pub(super) struct ScaledMin {
    pub d: [u8; 2],
    pub dmin: [u8; 2],
    /// Per sub-block: the scale and min levels, in 0..=`scale_max`.
    pub sc: Vec<u8>,
    pub m: Vec<u8>,
    /// Per value, in 0..=levels.
    pub quants: Vec<u8>,
}

/// Chooses the scales and mins of a super-block of `sub_len`-value sub-blocks so every
/// sub-block's range is covered by `levels` steps, then rounds each value to its level.
pub(super) fn quantize_scaled_min(values: &[f32], sub_len: usize, levels: u8, scale_max: u8) -> ScaledMin {
    let sub_blocks: Vec<&[f32]> = values.chunks_exact(sub_len).collect();
    let limit = f32::from(scale_max);
    // The min is subtracted as a non-negative multiple of dmin, so offsets cover min(0, lowest).
    let needed_offset: Vec<f32> =
        sub_blocks.iter().map(|xs| -xs.iter().copied().fold(0.0f32, f32::min)).collect();
    let (dmin_bits, dmin) = stored_f16_covering(needed_offset.iter().copied().fold(0.0, f32::max), limit);
    let m: Vec<u8> = needed_offset.iter().map(|&needed| covering_level(needed, dmin, scale_max)).collect();
    let needed_scale: Vec<f32> = sub_blocks
        .iter()
        .zip(&m)
        .map(|(xs, &m)| {
            let highest = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            (highest + dmin * f32::from(m)).max(0.0) / f32::from(levels)
        })
        .collect();
    let (d_bits, d) = stored_f16_covering(needed_scale.iter().copied().fold(0.0, f32::max), limit);
    let sc: Vec<u8> = needed_scale.iter().map(|&needed| covering_level(needed, d, scale_max)).collect();
    let quants = values
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let j = i / sub_len;
            let inv_step = inverse(d * f32::from(sc[j]));
            ((x + dmin * f32::from(m[j])) * inv_step).round().clamp(0.0, f32::from(levels)) as u8
        })
        .collect();
    ScaledMin { d: d_bits, dmin: dmin_bits, sc, m, quants }
}

/// Q4_K/Q5_K: 32-value sub-blocks with 6-bit scales and mins.
/// Returns (d, dmin, packed scales, quants in 0..=levels).
fn quantize_k4(values: &[f32], levels: u8) -> ([u8; 2], [u8; 2], [u8; 12], [u8; QK_K]) {
    let q = quantize_scaled_min(values, 32, levels, 63);
    let sc: [u8; 8] = q.sc.try_into().expect("8 sub-blocks");
    let m: [u8; 8] = q.m.try_into().expect("8 sub-blocks");
    (q.d, q.dmin, pack_scale_min(&sc, &m), q.quants.try_into().expect("256 quants"))
}

/// Symmetric sub-block scales (x = d·sc·q, |q| <= `max_quant`): each `sub_len`-value
/// sub-block's scale level (in 0..=`scale_max`) covers its largest magnitude.
/// Returns (d as stored, d, levels).
pub(super) fn symmetric_scales(
    values: &[f32],
    sub_len: usize,
    max_quant: f32,
    scale_max: u8,
) -> ([u8; 2], f32, Vec<u8>) {
    let needed: Vec<f32> = values
        .chunks_exact(sub_len)
        .map(|xs| xs.iter().fold(0.0f32, |a, v| a.max(v.abs())) / max_quant)
        .collect();
    let (d_bits, d) = stored_f16_covering(needed.iter().copied().fold(0.0, f32::max), f32::from(scale_max));
    let levels = needed.iter().map(|&n| covering_level(n, d, scale_max)).collect();
    (d_bits, d, levels)
}

/// Random Q4_K/Q5_K super-block parameters. Scales and mins are drawn independently (so a
/// kernel that swaps them fails), sized so values stay within [-0.9, 1.3]·amplitude and
/// average about zero.
fn random_scaled_min(rng: &mut SplitMix64, levels: f32) -> ([u8; 2], [u8; 2], [u8; 12]) {
    let amplitude = rng.uniform(0.5, 1.0);
    let d = stored_f16(1.6 * amplitude / (63.0 * levels)).0;
    let dmin = stored_f16(0.9 * amplitude / 63.0).0;
    let sc: [u8; 8] = std::array::from_fn(|_| rng.range_u8(32, 63));
    let m: [u8; 8] = std::array::from_fn(|_| rng.range_u8(21, 63));
    (d, dmin, pack_scale_min(&sc, &m))
}

impl QuantBlock for BlockQ4K {
    const TYPE: GgmlType = GgmlType::Q4_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        dequantize_scaled_min(self.d, self.dmin, &self.scales, |i| k_nibble(&self.qs, i), out);
    }

    fn quantize(values: &[f32]) -> Self {
        let (d, dmin, scales, quants) = quantize_k4(values, 15);
        BlockQ4K { d, dmin, scales, qs: pack_k_nibbles(&quants) }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        let (d, dmin, scales) = random_scaled_min(rng, 15.0);
        BlockQ4K { d, dmin, scales, qs: random_bytes(rng) }
    }
}

impl BlockQ5K {
    fn quant(&self, i: usize) -> u8 {
        let high = (self.qh[i % 32] >> (i / 32)) & 1;
        k_nibble(&self.qs, i) | (high << 4)
    }
}

impl QuantBlock for BlockQ5K {
    const TYPE: GgmlType = GgmlType::Q5_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        dequantize_scaled_min(self.d, self.dmin, &self.scales, |i| self.quant(i), out);
    }

    fn quantize(values: &[f32]) -> Self {
        let (d, dmin, scales, quants) = quantize_k4(values, 31);
        let qh =
            std::array::from_fn(|l| (0..8).fold(0u8, |acc, j| acc | (((quants[32 * j + l] >> 4) & 1) << j)));
        BlockQ5K { d, dmin, scales, qh, qs: pack_k_nibbles(&quants) }
    }

    fn random(rng: &mut SplitMix64) -> Self {
        let (d, dmin, scales) = random_scaled_min(rng, 31.0);
        BlockQ5K { d, dmin, scales, qh: random_bytes(rng), qs: random_bytes(rng) }
    }
}

impl BlockQ6K {
    /// Value i's 6-bit quant (0..64, before subtracting 32).
    fn quant(&self, i: usize) -> u8 {
        let (half, within) = (i / 128, i % 128);
        let (group, l) = (within / 32, within % 32);
        let ql = self.ql[64 * half + 32 * (group % 2) + l];
        let low = if group < 2 { ql & 0x0F } else { ql >> 4 };
        let high = (self.qh[32 * half + l] >> (2 * group)) & 3;
        low | (high << 4)
    }
}

impl QuantBlock for BlockQ6K {
    const TYPE: GgmlType = GgmlType::Q6_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        let d = f16_value(self.d);
        for (i, x) in out.iter_mut().enumerate() {
            let scale = d * f32::from(self.scales[i / 16]);
            *x = scale * (i32::from(self.quant(i)) - 32) as f32;
        }
    }

    fn quantize(values: &[f32]) -> Self {
        // Symmetric: ±31 steps cover each sub-block's largest magnitude.
        let (d_bits, d, levels) = symmetric_scales(values, 16, 31.0, 127);
        let scales: [i8; 16] = std::array::from_fn(|j| levels[j] as i8);
        let quants: [u8; QK_K] = std::array::from_fn(|i| {
            let inv_step = inverse(d * f32::from(scales[i / 16]));
            ((values[i] * inv_step).round().clamp(-32.0, 31.0) as i32 + 32) as u8
        });
        let mut block = BlockQ6K { ql: [0; QK_K / 2], qh: [0; QK_K / 4], scales, d: d_bits };
        for (i, &q) in quants.iter().enumerate() {
            let (half, within) = (i / 128, i % 128);
            let (group, l) = (within / 32, within % 32);
            let shift = if group < 2 { 0 } else { 4 };
            block.ql[64 * half + 32 * (group % 2) + l] |= (q & 0x0F) << shift;
            block.qh[32 * half + l] |= (q >> 4) << (2 * group);
        }
        block
    }

    fn random(rng: &mut SplitMix64) -> Self {
        let amplitude = rng.uniform(0.5, 1.0);
        BlockQ6K {
            ql: random_bytes(rng),
            qh: random_bytes(rng),
            // ggml's quantizer produces negative scales too.
            scales: std::array::from_fn(|_| rng.signed(64, 127)),
            d: stored_f16(amplitude / (127.0 * 32.0)).0,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Hand-built super-blocks with known scales and quants: these pin the bit layouts.
    use super::*;
    use crate::quant::block::{dequantized, f16_bits};

    #[test]
    fn scale_min_packing_matches_ggml_bit_positions() {
        // Sub-block 5: scale 0b10_1101 = 45, min 0b11_0110 = 54.
        let mut scales = [0u8; 12];
        scales[9] = 0b0110_1101; // low nibbles: scale 1101, min 0110
        scales[1] = 0b10 << 6; // scale's top two bits
        scales[5] = 0b11 << 6; // min's top two bits
        assert_eq!(unpack_scale_min(&scales, 5), (45, 54));
        // Sub-block 1 reads the low 6 bits of bytes 1 and 5, ignoring the top two.
        assert_eq!(unpack_scale_min(&scales, 1), (0, 0));
        scales[1] |= 17;
        scales[5] |= 60;
        assert_eq!(unpack_scale_min(&scales, 1), (17, 60));
        let sc = [1, 17, 3, 63, 0, 45, 33, 62];
        let m = [63, 60, 0, 1, 2, 54, 31, 32];
        let packed = pack_scale_min(&sc, &m);
        for j in 0..8 {
            assert_eq!(unpack_scale_min(&packed, j), (sc[j], m[j]), "sub-block {j}");
        }
    }

    fn q4k_block() -> BlockQ4K {
        // Sub-block 0: scale 2, min 3; sub-block 3: scale 5, min 1; others 0.
        let mut sc = [0u8; 8];
        let mut m = [0u8; 8];
        (sc[0], m[0], sc[3], m[3]) = (2, 3, 5, 1);
        let mut qs = [0u8; 128];
        qs[0] = 0x9_7; // value 0: 7 (sub-block 0), value 32: 9 (sub-block 1)
        qs[32 + 31] = 0xC_0; // value 64+31: 0 (sub-block 2), value 64+32+31 = 127: 12 (sub-block 3)
        BlockQ4K { d: f16_bits(0.5), dmin: f16_bits(0.25), scales: pack_scale_min(&sc, &m), qs }
    }

    #[test]
    fn q4_k_values() {
        let out = dequantized(&q4k_block());
        assert_eq!(out[0], 0.5 * 2.0 * 7.0 - 0.25 * 3.0);
        assert_eq!(out[1], -0.75);
        assert_eq!(out[32], 0.0); // sub-block 1 has scale 0 and min 0
        assert_eq!(out[127], 0.5 * 5.0 * 12.0 - 0.25);
        assert_eq!(out[96], -0.25);
    }

    #[test]
    fn q5_k_high_bit_of_value_i_is_bit_i_div_32_of_qh_i_mod_32() {
        let q4 = q4k_block();
        let mut qh = [0u8; 32];
        qh[0] = 1; // value 0 gets +16
        qh[31] = 1 << 3; // value 3·32+31 = 127 gets +16
        let block = BlockQ5K { d: q4.d, dmin: q4.dmin, scales: q4.scales, qh, qs: q4.qs };
        let out = dequantized(&block);
        assert_eq!(out[0], 0.5 * 2.0 * 23.0 - 0.75);
        assert_eq!(out[1], -0.75);
        assert_eq!(out[127], 0.5 * 5.0 * 28.0 - 0.25);
    }

    #[test]
    fn q6_k_values() {
        let mut block = BlockQ6K { ql: [0; 128], qh: [0; 64], scales: [0; 16], d: f16_bits(0.5) };
        block.scales[0] = 2;
        block.scales[4] = -3; // values 64..80
        block.scales[6] = 1; // values 96..112
        block.scales[14] = 1; // values 224..240 (half 1, group 3)
        block.ql[0] = 0x5_A; // value 0: low 10, value 64: low 5
        block.qh[0] = 0b11_00_00_01; // value 0: high 1, value 96: high 3 (values 32, 64: 0)
        block.ql[64 + 32] = 0x3_0; // half 1: value 128+96 = 224 low 3
        block.qh[32] = 0b11 << 6; // value 224: high 3
        let out = dequantized(&block);
        assert_eq!(out[0], 0.5 * 2.0 * ((10 | 16) - 32) as f32); // -6
        assert_eq!(out[64], 0.5 * -3.0 * (5 - 32) as f32); // 40.5
        assert_eq!(out[96], 0.5 * 1.0 * (48 - 32) as f32); // low nibble 0 (ql[32] high)
        assert_eq!(out[224], 0.5 * 1.0 * ((3 | 48) - 32) as f32); // 9.5
        assert_eq!(out[1], 0.5 * 2.0 * -32.0);
    }
}
