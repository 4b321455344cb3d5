use half::{bf16, f16};

use super::rng::SplitMix64;

pub(super) fn dequantize_f32(bytes: &[u8], out: &mut [f32]) {
    for (chunk, value) in bytes.chunks_exact(4).zip(out) {
        *value = f32::from_le_bytes(chunk.try_into().expect("4-byte chunk"));
    }
}

pub(super) fn dequantize_f16(bytes: &[u8], out: &mut [f32]) {
    for (chunk, value) in bytes.chunks_exact(2).zip(out) {
        *value = f16::from_le_bytes([chunk[0], chunk[1]]).to_f32();
    }
}

pub(super) fn dequantize_bf16(bytes: &[u8], out: &mut [f32]) {
    for (chunk, value) in bytes.chunks_exact(2).zip(out) {
        *value = bf16::from_le_bytes([chunk[0], chunk[1]]).to_f32();
    }
}

pub(super) fn quantize_f32(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Round to nearest even, as ggml's `GGML_FP32_TO_FP16`.
pub(super) fn quantize_f16(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|&v| f16::from_f32(v).to_le_bytes()).collect()
}

/// Round to nearest even, as ggml's `GGML_FP32_TO_BF16`.
pub(super) fn quantize_bf16(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|&v| bf16::from_f32(v).to_le_bytes()).collect()
}

fn random_values(count: usize, rng: &mut SplitMix64) -> Vec<f32> {
    (0..count).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

pub(super) fn random_f32(count: usize, rng: &mut SplitMix64) -> Vec<u8> {
    quantize_f32(&random_values(count, rng))
}

pub(super) fn random_f16(count: usize, rng: &mut SplitMix64) -> Vec<u8> {
    quantize_f16(&random_values(count, rng))
}

pub(super) fn random_bf16(count: usize, rng: &mut SplitMix64) -> Vec<u8> {
    quantize_bf16(&random_values(count, rng))
}
