//! ggml's 2- and 3-bit 256-value super-block "K" formats, both in sixteen 16-value
//! sub-blocks and with the quant layout of Q6_K's low bits: in half h (128 values), value
//! 32g + l (group g < 4, l < 32) has its 2 low bits in bits 2g..2g+1 of `qs[32h + l]` and its
//! scale at sub-block 8h + 2g + l/16.
//!
//! Q2_K: x = d·sc·q - dmin·m, q in 0..4, 4-bit sc and m.
//! Q3_K: x = d·(sc - 32)·(q - 4), q in 0..8 with bit 2 in `hmask`, 6-bit sc.

use bytemuck::{Pod, Zeroable};

use super::block::{f16_value, inverse, random_bytes, stored_f16, QuantBlock};
use super::k_quants::{quantize_scaled_min, symmetric_scales};
use super::rng::SplitMix64;
use crate::gguf::GgmlType;

const QK_K: usize = 256;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ2K {
    /// Sub-block s: scale in the low nibble of byte s, min in the high nibble.
    pub scales: [u8; QK_K / 16],
    pub qs: [u8; QK_K / 4],
    pub d: [u8; 2],
    pub dmin: [u8; 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockQ3K {
    /// Bit 2 of value 128h + 32g + l is bit 4h + g of `hmask[l]`.
    pub hmask: [u8; QK_K / 8],
    pub qs: [u8; QK_K / 4],
    /// Sixteen 6-bit scales; see [`q3_k_scale`].
    pub scales: [u8; 12],
    pub d: [u8; 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ2K>() == 84);
const _: () = assert!(std::mem::size_of::<BlockQ3K>() == 110);

/// (byte of `qs`, bit shift, sub-block) of value i.
fn two_bit_position(i: usize) -> (usize, usize, usize) {
    let (half, within) = (i / 128, i % 128);
    let (group, l) = (within / 32, within % 32);
    (32 * half + l, 2 * group, 8 * half + 2 * group + l / 16)
}

fn two_bits(qs: &[u8; QK_K / 4], i: usize) -> u8 {
    let (byte, shift, _) = two_bit_position(i);
    (qs[byte] >> shift) & 3
}

fn pack_two_bits(quants: &[u8]) -> [u8; QK_K / 4] {
    let mut qs = [0u8; QK_K / 4];
    for (i, &q) in quants.iter().enumerate() {
        let (byte, shift, _) = two_bit_position(i);
        qs[byte] |= (q & 3) << shift;
    }
    qs
}

/// Sub-block s's 6-bit scale: low 4 bits in the low (s < 8) or high nibble of byte s % 8,
/// high 2 bits in bits 2(s/4)..2(s/4)+1 of byte 8 + s % 4.
pub fn q3_k_scale(scales: &[u8; 12], s: usize) -> u8 {
    let low = (scales[s % 8] >> (4 * (s / 8))) & 0x0F;
    let high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
    low | (high << 4)
}

fn pack_q3_k_scales(levels: &[u8; 16]) -> [u8; 12] {
    let mut packed = [0u8; 12];
    for (s, &level) in levels.iter().enumerate() {
        packed[s % 8] |= (level & 0x0F) << (4 * (s / 8));
        packed[8 + s % 4] |= (level >> 4) << (2 * (s / 4));
    }
    packed
}

impl BlockQ3K {
    /// Value i's quant, 0..8 (before subtracting 4).
    fn quant(&self, i: usize) -> u8 {
        let (half, l) = (i / 128, i % 32);
        let group = (i % 128) / 32;
        let high = (self.hmask[l] >> (4 * half + group)) & 1;
        two_bits(&self.qs, i) | (high << 2)
    }
}

impl QuantBlock for BlockQ2K {
    const TYPE: GgmlType = GgmlType::Q2_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        let (d, dmin) = (f16_value(self.d), f16_value(self.dmin));
        for (i, x) in out.iter_mut().enumerate() {
            let scale = self.scales[two_bit_position(i).2];
            let step = d * f32::from(scale & 0x0F);
            *x = step * f32::from(two_bits(&self.qs, i)) - dmin * f32::from(scale >> 4);
        }
    }

    fn quantize(values: &[f32]) -> Self {
        let q = quantize_scaled_min(values, 16, 3, 15);
        BlockQ2K {
            scales: std::array::from_fn(|s| q.sc[s] | (q.m[s] << 4)),
            qs: pack_two_bits(&q.quants),
            d: q.d,
            dmin: q.dmin,
        }
    }

    /// Scales and mins drawn independently (so a kernel that swaps them fails), sized so
    /// values stay within [-0.9, 1.3]·amplitude and average about zero.
    fn random(rng: &mut SplitMix64) -> Self {
        let amplitude = rng.uniform(0.5, 1.0);
        BlockQ2K {
            scales: std::array::from_fn(|_| rng.range_u8(8, 15) | (rng.range_u8(5, 15) << 4)),
            qs: random_bytes(rng),
            d: stored_f16(1.6 * amplitude / (15.0 * 3.0)).0,
            dmin: stored_f16(0.9 * amplitude / 15.0).0,
        }
    }
}

impl QuantBlock for BlockQ3K {
    const TYPE: GgmlType = GgmlType::Q3_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        let d = f16_value(self.d);
        for (i, x) in out.iter_mut().enumerate() {
            let scale = i32::from(q3_k_scale(&self.scales, two_bit_position(i).2)) - 32;
            *x = d * scale as f32 * (i32::from(self.quant(i)) - 4) as f32;
        }
    }

    fn quantize(values: &[f32]) -> Self {
        // Symmetric: ±3 steps cover each sub-block's largest magnitude (-4 goes unused).
        let (d_bits, d, levels) = symmetric_scales(values, 16, 3.0, 31);
        let quants: Vec<u8> = values
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let inv_step = inverse(d * f32::from(levels[i / 16]));
                ((x * inv_step).round().clamp(-4.0, 3.0) as i32 + 4) as u8
            })
            .collect();
        let mut hmask = [0u8; QK_K / 8];
        for (i, &q) in quants.iter().enumerate() {
            let (half, group, l) = (i / 128, (i % 128) / 32, i % 32);
            hmask[l] |= (q >> 2) << (4 * half + group);
        }
        let stored: [u8; 16] = std::array::from_fn(|s| levels[s] + 32);
        BlockQ3K { hmask, qs: pack_two_bits(&quants), scales: pack_q3_k_scales(&stored), d: d_bits }
    }

    /// Scales of magnitude 16..=31 and either sign, as ggml's quantizer produces.
    fn random(rng: &mut SplitMix64) -> Self {
        let amplitude = rng.uniform(0.5, 1.0);
        let levels: [u8; 16] = std::array::from_fn(|_| (32 + rng.signed(16, 31)) as u8);
        BlockQ3K {
            hmask: random_bytes(rng),
            qs: random_bytes(rng),
            scales: pack_q3_k_scales(&levels),
            d: stored_f16(amplitude / (32.0 * 4.0)).0,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Hand-built super-blocks with known scales and quants: these pin the bit layouts.
    use super::*;
    use crate::quant::block::{dequantized, f16_bits};

    #[test]
    fn q2_k_values() {
        let mut block = BlockQ2K { scales: [0; 16], qs: [0; 64], d: f16_bits(0.5), dmin: f16_bits(0.25) };
        block.scales[0] = 0x3_2; // values 0..16: scale 2, min 3
        block.scales[6] = 0x1_5; // values 96..112 (half 0, group 3): scale 5, min 1
        block.scales[9] = 0x0_4; // values 128+16..128+32: scale 4, min 0
        block.qs[0] = 0b11_00_00_10; // value 0: 2, value 96: 3
        block.qs[32 + 20] = 0b01; // value 128 + 20: 1
        let out = dequantized(&block);
        assert_eq!(out[0], 0.5 * 2.0 * 2.0 - 0.25 * 3.0);
        assert_eq!(out[1], -0.75);
        assert_eq!(out[96], 0.5 * 5.0 * 3.0 - 0.25);
        assert_eq!(out[148], 0.5 * 4.0);
        assert_eq!(out[32], 0.0);
    }

    #[test]
    fn q3_k_scale_packing_matches_ggml_bit_positions() {
        let mut scales = [0u8; 12];
        scales[3] = 0xA_5; // sub-block 3: low 5; sub-block 11: low 10
        scales[8 + 3] = 0b10_00_00_01; // sub-block 3: high 1; sub-block 15: high 2
        scales[8 + 3] |= 0b11 << 4; // sub-block 11: high 3
        assert_eq!(q3_k_scale(&scales, 3), 5 | (1 << 4));
        assert_eq!(q3_k_scale(&scales, 11), 10 | (3 << 4));
        assert_eq!(q3_k_scale(&scales, 15), 2 << 4);
        let levels: [u8; 16] = std::array::from_fn(|s| (s as u8 * 37 + 5) % 64);
        let packed = pack_q3_k_scales(&levels);
        for (s, &level) in levels.iter().enumerate() {
            assert_eq!(q3_k_scale(&packed, s), level, "sub-block {s}");
        }
    }

    #[test]
    fn q3_k_values() {
        let mut levels = [32u8; 16];
        levels[0] = 34; // values 0..16: scale 2
        levels[15] = 29; // values 240..256: scale -3
        let mut block =
            BlockQ3K { hmask: [0; 32], qs: [0; 64], scales: pack_q3_k_scales(&levels), d: f16_bits(0.5) };
        block.qs[0] = 0b11; // value 0: low bits 3
        block.hmask[0] = 1; // value 0: bit 2 set -> q = 7
        block.qs[32 + 31] = 0b10 << 6; // value 128 + 96 + 31 = 255: low bits 2, bit 2 clear -> q = 2
        let out = dequantized(&block);
        assert_eq!(out[0], 0.5 * 2.0 * 3.0);
        assert_eq!(out[1], 0.5 * 2.0 * -4.0);
        assert_eq!(out[255], 0.5 * -3.0 * -2.0);
        assert_eq!(out[100], 0.0);
    }
}
