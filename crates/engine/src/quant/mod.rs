//! ggml tensor formats on the CPU: block layouts, reference dequantization (the ground truth
//! the WGSL kernels are tested against), simple round-to-nearest quantizers and random blocks
//! for kernel tests and synthetic models.
//!
//! Supported: [`SUPPORTED_TYPES`].

mod block;
mod float;
mod iq4;
mod k_quants;
mod legacy;
mod low_bit_k_quants;
mod mxfp4;
mod rng;
mod widen;

#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod real_tensor_tests;
#[cfg(test)]
mod reference_fixture_tests;

use crate::gguf::GgmlType;

pub use block::QuantBlock;
pub use iq4::{BlockIq4Nl, BlockIq4Xs, IQ4_VALUES};
pub use k_quants::{BlockQ4K, BlockQ5K, BlockQ6K};
pub use legacy::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0};
pub use low_bit_k_quants::{BlockQ2K, BlockQ3K};
pub use mxfp4::{BlockMxfp4, MXFP4_VALUES};
pub use widen::{widen_to_q8_0, widens_to_q8_0};

/// The weight types DOPPLER handles: [`dequantize_row`], [`quantize_row`] and
/// [`random_quantized`] on the CPU, and the matmul and embedding kernels on the GPU (which
/// use this very table).
pub const SUPPORTED_TYPES: [GgmlType; 16] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::MXFP4,
];

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum QuantError {
    #[error("{type_name} is not supported by the CPU reference")]
    Unsupported { type_name: &'static str },
    #[error("{count} values are not a whole number of {type_name} blocks of {block_len}")]
    NotWholeBlocks { type_name: &'static str, count: usize, block_len: usize },
    #[error("{count} {type_name} values take {expected} bytes, got {actual}")]
    ByteLength { type_name: &'static str, count: usize, expected: usize, actual: usize },
    #[error("value {index} ({value}) cannot be quantized to {type_name}")]
    NotRepresentable { type_name: &'static str, index: usize, value: f32 },
}

/// The bytes `count` values of `ty` take, checking that they form whole blocks.
fn byte_len(ty: GgmlType, count: usize) -> Result<usize, QuantError> {
    if !count.is_multiple_of(ty.block_len()) {
        return Err(QuantError::NotWholeBlocks { type_name: ty.name(), count, block_len: ty.block_len() });
    }
    Ok(count / ty.block_len() * ty.block_bytes())
}

/// Dequantizes whole blocks of `ty` from `bytes` into `out`, exactly as ggml's CPU backend does.
/// `bytes` must hold exactly `out.len()` values (one row or several).
pub fn dequantize_row(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<(), QuantError> {
    let expected = byte_len(ty, out.len())?;
    if bytes.len() != expected {
        return Err(QuantError::ByteLength {
            type_name: ty.name(),
            count: out.len(),
            expected,
            actual: bytes.len(),
        });
    }
    match ty {
        GgmlType::F32 => float::dequantize_f32(bytes, out),
        GgmlType::F16 => float::dequantize_f16(bytes, out),
        GgmlType::BF16 => float::dequantize_bf16(bytes, out),
        GgmlType::Q4_0 => block::dequantize_blocks::<BlockQ4_0>(bytes, out),
        GgmlType::Q4_1 => block::dequantize_blocks::<BlockQ4_1>(bytes, out),
        GgmlType::Q5_0 => block::dequantize_blocks::<BlockQ5_0>(bytes, out),
        GgmlType::Q5_1 => block::dequantize_blocks::<BlockQ5_1>(bytes, out),
        GgmlType::Q8_0 => block::dequantize_blocks::<BlockQ8_0>(bytes, out),
        GgmlType::Q4_K => block::dequantize_blocks::<BlockQ4K>(bytes, out),
        GgmlType::Q5_K => block::dequantize_blocks::<BlockQ5K>(bytes, out),
        GgmlType::Q6_K => block::dequantize_blocks::<BlockQ6K>(bytes, out),
        GgmlType::Q2_K => block::dequantize_blocks::<BlockQ2K>(bytes, out),
        GgmlType::Q3_K => block::dequantize_blocks::<BlockQ3K>(bytes, out),
        GgmlType::IQ4_NL => block::dequantize_blocks::<BlockIq4Nl>(bytes, out),
        GgmlType::IQ4_XS => block::dequantize_blocks::<BlockIq4Xs>(bytes, out),
        GgmlType::MXFP4 => block::dequantize_blocks::<BlockMxfp4>(bytes, out),
        other => return Err(QuantError::Unsupported { type_name: other.name() }),
    }
    Ok(())
}

/// Errors unless `bytes` are whole blocks of `ty`.
fn check_whole_blocks(ty: GgmlType, bytes: &[u8]) -> Result<(), QuantError> {
    if !bytes.len().is_multiple_of(ty.block_bytes()) {
        return Err(QuantError::ByteLength {
            type_name: ty.name(),
            count: bytes.len() / ty.block_bytes() * ty.block_len(),
            expected: bytes.len() / ty.block_bytes() * ty.block_bytes(),
            actual: bytes.len(),
        });
    }
    Ok(())
}

/// Dequantizes all of `bytes`, which must be whole blocks of `ty`.
pub fn dequantize(ty: GgmlType, bytes: &[u8]) -> Result<Vec<f32>, QuantError> {
    check_whole_blocks(ty, bytes)?;
    let mut out = vec![0.0; bytes.len() / ty.block_bytes() * ty.block_len()];
    dequantize_row(ty, bytes, &mut out)?;
    Ok(out)
}

/// Round-to-nearest quantization of whole blocks of `values` (finite, and small enough for the
/// type's f16 scales).
pub fn quantize_row(ty: GgmlType, values: &[f32]) -> Result<Vec<u8>, QuantError> {
    byte_len(ty, values.len())?;
    let not_representable =
        |index: usize| QuantError::NotRepresentable { type_name: ty.name(), index, value: values[index] };
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(not_representable(index));
    }
    let bytes = match ty {
        GgmlType::F32 => float::quantize_f32(values),
        GgmlType::F16 => float::quantize_f16(values),
        GgmlType::BF16 => float::quantize_bf16(values),
        GgmlType::Q4_0 => block::quantize_blocks::<BlockQ4_0>(values),
        GgmlType::Q4_1 => block::quantize_blocks::<BlockQ4_1>(values),
        GgmlType::Q5_0 => block::quantize_blocks::<BlockQ5_0>(values),
        GgmlType::Q5_1 => block::quantize_blocks::<BlockQ5_1>(values),
        GgmlType::Q8_0 => block::quantize_blocks::<BlockQ8_0>(values),
        GgmlType::Q4_K => block::quantize_blocks::<BlockQ4K>(values),
        GgmlType::Q5_K => block::quantize_blocks::<BlockQ5K>(values),
        GgmlType::Q6_K => block::quantize_blocks::<BlockQ6K>(values),
        GgmlType::Q2_K => block::quantize_blocks::<BlockQ2K>(values),
        GgmlType::Q3_K => block::quantize_blocks::<BlockQ3K>(values),
        GgmlType::IQ4_NL => block::quantize_blocks::<BlockIq4Nl>(values),
        GgmlType::IQ4_XS => block::quantize_blocks::<BlockIq4Xs>(values),
        GgmlType::MXFP4 => block::quantize_blocks::<BlockMxfp4>(values),
        other => return Err(QuantError::Unsupported { type_name: other.name() }),
    };
    // A scale that overflowed f16 shows up as a non-finite dequantized value.
    let mut check = vec![0.0; values.len()];
    dequantize_row(ty, &bytes, &mut check)?;
    match check.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(not_representable(index)),
        None => Ok(bytes),
    }
}

/// `rows` rows of `row_len` random but valid values of `ty`: finite, with block scales chosen
/// so dequantized values lie roughly in [-1, 1] (every quant level used). Deterministic per
/// seed. Panics if `ty` is unsupported or `row_len` is not a whole number of blocks, which
/// are caller bugs.
pub fn random_quantized(ty: GgmlType, row_len: usize, rows: usize, seed: u64) -> Vec<u8> {
    let count = row_len.checked_mul(rows).expect("random_quantized: row_len * rows overflows");
    if let Err(e) = byte_len(ty, row_len) {
        panic!("random_quantized: {e}");
    }
    let mut rng = rng::SplitMix64::new(seed);
    match ty {
        GgmlType::F32 => float::random_f32(count, &mut rng),
        GgmlType::F16 => float::random_f16(count, &mut rng),
        GgmlType::BF16 => float::random_bf16(count, &mut rng),
        GgmlType::Q4_0 => block::random_blocks::<BlockQ4_0>(count, &mut rng),
        GgmlType::Q4_1 => block::random_blocks::<BlockQ4_1>(count, &mut rng),
        GgmlType::Q5_0 => block::random_blocks::<BlockQ5_0>(count, &mut rng),
        GgmlType::Q5_1 => block::random_blocks::<BlockQ5_1>(count, &mut rng),
        GgmlType::Q8_0 => block::random_blocks::<BlockQ8_0>(count, &mut rng),
        GgmlType::Q4_K => block::random_blocks::<BlockQ4K>(count, &mut rng),
        GgmlType::Q5_K => block::random_blocks::<BlockQ5K>(count, &mut rng),
        GgmlType::Q6_K => block::random_blocks::<BlockQ6K>(count, &mut rng),
        GgmlType::Q2_K => block::random_blocks::<BlockQ2K>(count, &mut rng),
        GgmlType::Q3_K => block::random_blocks::<BlockQ3K>(count, &mut rng),
        GgmlType::IQ4_NL => block::random_blocks::<BlockIq4Nl>(count, &mut rng),
        GgmlType::IQ4_XS => block::random_blocks::<BlockIq4Xs>(count, &mut rng),
        GgmlType::MXFP4 => block::random_blocks::<BlockMxfp4>(count, &mut rng),
        other => panic!("random_quantized: {} is not supported", other.name()),
    }
}
