use bytemuck::Pod;

use super::rng::SplitMix64;
use crate::gguf::GgmlType;

/// A ggml quantization block: a `#[repr(C)]`, alignment-1 struct laid out byte for byte as in
/// ggml-common.h, so a tensor's bytes can be viewed as a slice of blocks.
pub trait QuantBlock: Pod {
    const TYPE: GgmlType;
    /// Values per block.
    const LEN: usize;

    /// Writes the block's `LEN` values to `out`.
    fn dequantize(&self, out: &mut [f32]);

    /// Round-to-nearest quantization of `LEN` finite values.
    fn quantize(values: &[f32]) -> Self;

    /// A valid block with random quants and scales, its values roughly within [-1, 1].
    fn random(rng: &mut SplitMix64) -> Self;
}

/// One block's values, for tests that pin a layout on hand-built blocks.
#[cfg(test)]
pub(super) fn dequantized<B: QuantBlock>(block: &B) -> Vec<f32> {
    let mut out = vec![0.0; B::LEN];
    block.dequantize(&mut out);
    out
}

pub(super) fn dequantize_blocks<B: QuantBlock>(bytes: &[u8], out: &mut [f32]) {
    let blocks: &[B] = bytemuck::cast_slice(bytes);
    for (block, values) in blocks.iter().zip(out.chunks_exact_mut(B::LEN)) {
        block.dequantize(values);
    }
}

pub(super) fn quantize_blocks<B: QuantBlock>(values: &[f32]) -> Vec<u8> {
    let blocks: Vec<B> = values.chunks_exact(B::LEN).map(B::quantize).collect();
    bytemuck::cast_slice(&blocks).to_vec()
}

pub(super) fn random_blocks<B: QuantBlock>(count: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let blocks: Vec<B> = (0..count / B::LEN).map(|_| B::random(rng)).collect();
    bytemuck::cast_slice(&blocks).to_vec()
}

/// N random bytes: quants, where every bit pattern is valid.
pub(super) fn random_bytes<const N: usize>(rng: &mut SplitMix64) -> [u8; N] {
    let mut bytes = [0; N];
    rng.fill_bytes(&mut bytes);
    bytes
}

pub(super) fn f16_bits(value: f32) -> [u8; 2] {
    half::f16::from_f32(value).to_le_bytes()
}

pub(super) fn f16_value(bits: [u8; 2]) -> f32 {
    half::f16::from_le_bytes(bits).to_f32()
}

/// Rounds `value` to f16, returning both the stored bits and the value they decode to, so
/// quantizers round against the scale the dequantizer will actually use.
pub(super) fn stored_f16(value: f32) -> ([u8; 2], f32) {
    let bits = f16_bits(value);
    (bits, f16_value(bits))
}

/// The value of largest magnitude, keeping its sign (ggml's legacy quantizers map it to the
/// most negative quant level to use the full asymmetric range).
pub(super) fn signed_abs_max(values: &[f32]) -> f32 {
    values.iter().copied().fold(0.0f32, |best, v| if v.abs() > best.abs() { v } else { best })
}

/// `1 / d`, or 0 for a zero scale (an all-zero block quantizes to zero quants).
pub(super) fn inverse(d: f32) -> f32 {
    if d == 0.0 {
        0.0
    } else {
        1.0 / d
    }
}
