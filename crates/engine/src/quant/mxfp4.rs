//! MXFP4 (OCP microscaling): 32 FP4 (E2M1) values sharing a power-of-two E8M0 scale.
//! ggml stores the FP4 values doubled, as integers ([`MXFP4_VALUES`]), and halves the scale:
//! x = 2^(e - 128)·table[q], nibbles in Q4_0's layout.

use bytemuck::{Pod, Zeroable};

use super::block::{random_bytes, QuantBlock};
use super::iq4::{dequantize_table_block, pack_nearest};
use super::rng::SplitMix64;
use crate::gguf::GgmlType;

/// ggml's `kvalues_mxfp4`: the E2M1 values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, doubled.
pub const MXFP4_VALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

const QK: usize = 32;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct BlockMxfp4 {
    /// E8M0 exponent: the block's scale is 2^(e - 127).
    pub e: u8,
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockMxfp4>() == 17);

/// 2^(e - 128) (ggml's `ggml_e8m0_to_fp32_half`): f32 subnormals for e < 2.
pub fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 { 0x0020_0000u32 << e } else { u32::from(e - 1) << 23 };
    f32::from_bits(bits)
}

/// The largest finite E8M0 exponent (255 is NaN in the OCP format).
const MAX_EXPONENT: u8 = 254;

impl QuantBlock for BlockMxfp4 {
    const TYPE: GgmlType = GgmlType::MXFP4;
    const LEN: usize = QK;

    fn dequantize(&self, out: &mut [f32]) {
        dequantize_table_block(&MXFP4_VALUES, &self.qs, e8m0_half(self.e), out);
    }

    /// The smallest scale whose largest entry (12) covers the largest magnitude, then each
    /// value to the nearest entry.
    fn quantize(values: &[f32]) -> Self {
        let amax = values.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let e = (0..MAX_EXPONENT).find(|&e| 12.0 * e8m0_half(e) >= amax).unwrap_or(MAX_EXPONENT);
        BlockMxfp4 { e, qs: pack_nearest(&MXFP4_VALUES, values, e8m0_half(e)) }
    }

    /// Scales 2^-6..2^-3, so values stay within ±1.5.
    fn random(rng: &mut SplitMix64) -> Self {
        BlockMxfp4 { e: rng.range_u8(122, 125), qs: random_bytes(rng) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::block::dequantized;

    #[test]
    fn mxfp4_values_and_scales() {
        let mut qs = [0u8; 16];
        qs[0] = 0xF_7; // value 0: 12, value 16: -12
        qs[15] = 0x9_1; // value 15: 1, value 31: -1
        let out = dequantized(&BlockMxfp4 { e: 127, qs });
        assert_eq!((out[0], out[16], out[15], out[31], out[1]), (6.0, -6.0, 0.5, -0.5, 0.0));
        assert_eq!(e8m0_half(0), 2f32.powi(-128));
        assert_eq!(e8m0_half(1), 2f32.powi(-127));
        assert_eq!(e8m0_half(254), 2f32.powi(126));
    }
}
