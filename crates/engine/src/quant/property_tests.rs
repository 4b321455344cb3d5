//! Quantize → dequantize error bounds, and the shape of random blocks.

use super::k_quants::unpack_scale_min;
use super::rng::SplitMix64;
use super::*;
use crate::quant::block::f16_value;

/// Weight-like values: roughly normal (sum of four uniforms), with a few blocks scaled far up
/// or down and some constant and all-positive blocks, so scale extremes are exercised.
fn test_values(count: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let mut values: Vec<f32> = (0..count).map(|_| (0..4).map(|_| rng.uniform(-0.05, 0.05)).sum()).collect();
    for (b, block) in values.chunks_mut(256).enumerate() {
        match b % 5 {
            1 => block.iter_mut().for_each(|v| *v *= 40.0),
            2 => block.iter_mut().for_each(|v| *v *= 0.01),
            3 => block[..64].iter_mut().for_each(|v| *v = v.abs() + 0.02),
            4 => block[..32].iter_mut().for_each(|v| *v = 0.0),
            _ => {}
        }
    }
    values
}

fn round_trip(ty: GgmlType, values: &[f32]) -> (Vec<u8>, Vec<f32>) {
    let bytes = quantize_row(ty, values).unwrap();
    assert_eq!(bytes.len() as u64, ty.row_bytes(values.len() as u64).unwrap());
    let mut out = vec![f32::NAN; values.len()];
    dequantize_row(ty, &bytes, &mut out).unwrap();
    (bytes, out)
}

fn max_abs(values: &[f32]) -> f32 {
    values.iter().fold(0.0, |a, v| a.max(v.abs()))
}

/// Checks |x - y| <= bound(block index) for every value of every block of `block_len`.
fn assert_block_errors(
    ty: GgmlType,
    x: &[f32],
    y: &[f32],
    block_len: usize,
    bound: impl Fn(usize, &[f32]) -> f32,
) {
    for (b, (xs, ys)) in x.chunks(block_len).zip(y.chunks(block_len)).enumerate() {
        let limit = bound(b, xs);
        for (i, (a, c)) in xs.iter().zip(ys).enumerate() {
            assert!((a - c).abs() <= limit, "{ty}: block {b} value {i}: {a} -> {c}, error above {limit}");
        }
    }
}

fn relative_rmse(x: &[f32], y: &[f32]) -> f64 {
    let err: f64 = x.iter().zip(y).map(|(a, b)| f64::from(a - b).powi(2)).sum();
    let norm: f64 = x.iter().map(|a| f64::from(*a).powi(2)).sum();
    (err / norm).sqrt()
}

const VALUES: usize = 256 * 40;

/// Half the step between f16 subnormals (2^-24): scales below 2^-14, as in near-zero blocks,
/// are stored with this absolute error rather than 2^-11 relative.
const F16_SUBNORMAL_HALF_STEP: f32 = 1.0 / (1u32 << 25) as f32;

#[test]
fn float_types_round_as_documented() {
    let x = test_values(VALUES, 1);
    assert_eq!(round_trip(GgmlType::F32, &x).1, x);
    // f16 and bf16 round to nearest: relative error within half an ulp (2^-11, 2^-8) for
    // normal values; tiny values (f16 subnormals) within half the smallest subnormal step.
    let (_, y) = round_trip(GgmlType::F16, &x);
    assert_block_errors(GgmlType::F16, &x, &y, 1, |_, v| v[0].abs() * 2f32.powi(-11) + 2f32.powi(-25));
    let (_, y) = round_trip(GgmlType::BF16, &x);
    assert_block_errors(GgmlType::BF16, &x, &y, 1, |_, v| v[0].abs() * 2f32.powi(-8));
}

#[test]
fn q8_0_error_is_half_a_step() {
    // d = amax/127 rounded to f16 (2^-11 relative): error <= d/2, or up to 127·(d - d_f16)
    // where the largest value clamps; both are below 0.5·d·(1 + 2^-10) for normal scales.
    let x = test_values(VALUES, 2);
    let (_, y) = round_trip(GgmlType::Q8_0, &x);
    assert_block_errors(GgmlType::Q8_0, &x, &y, 32, |_, xs| {
        0.5 * max_abs(xs) / 127.0 * (1.0 + 1.0 / 1024.0) + 127.0 * F16_SUBNORMAL_HALF_STEP
    });
}

#[test]
fn q4_0_and_q5_0_error_is_at_most_one_step() {
    // The largest-magnitude value maps to the lowest level, so the range is asymmetric: values
    // near -max clamp to the top level, one step (|d| = amax/8, amax/16) away, plus the f16
    // rounding of d over levels-1 steps. All others are within half a step.
    for (ty, levels) in [(GgmlType::Q4_0, 8.0), (GgmlType::Q5_0, 16.0)] {
        let x = test_values(VALUES, 3);
        let (_, y) = round_trip(ty, &x);
        assert_block_errors(ty, &x, &y, 32, |_, xs| {
            max_abs(xs) / levels * (1.0 + levels / 2048.0) + levels * F16_SUBNORMAL_HALF_STEP
        });
        assert!(
            relative_rmse(&x, &y) < if levels == 8.0 { 0.10 } else { 0.05 },
            "{ty}: {}",
            relative_rmse(&x, &y)
        );
    }
}

#[test]
fn q4_1_and_q5_1_error_is_half_a_step() {
    // Step (max - min)/levels; d and the minimum are f16 (2^-11 relative, or the subnormal
    // half step), which adds at most 2^-10·amax at the ends of the range.
    for (ty, levels) in [(GgmlType::Q4_1, 15.0), (GgmlType::Q5_1, 31.0)] {
        let x = test_values(VALUES, 4);
        let (_, y) = round_trip(ty, &x);
        assert_block_errors(ty, &x, &y, 32, |_, xs| {
            let min = xs.iter().copied().fold(f32::INFINITY, f32::min);
            let max = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            0.5 * (max - min) / levels * (1.0 + 1.0 / 512.0)
                + max_abs(xs) / 1024.0
                + (levels + 1.0) * F16_SUBNORMAL_HALF_STEP
        });
    }
}

#[test]
fn q4_k_and_q5_k_error_is_half_a_sub_block_step() {
    // Each 32-value sub-block's step d·sc is rounded up from the one its range needs, by at most
    // one unit of d (the 6-bit scale is a ceiling) plus dmin/levels (the min is a ceiling too):
    // error <= ((max - min(0, lowest) + dmin)/levels + d) / 2.
    for (ty, levels, max_rmse) in [(GgmlType::Q4_K, 15.0, 0.09), (GgmlType::Q5_K, 31.0, 0.045)] {
        let x = test_values(VALUES, 5);
        let (bytes, y) = round_trip(ty, &x);
        let block_bytes = ty.block_bytes();
        assert_block_errors(ty, &x, &y, 32, |sub, xs| {
            let block = &bytes[sub / 8 * block_bytes..][..block_bytes];
            let d = f16_value([block[0], block[1]]);
            let dmin = f16_value([block[2], block[3]]);
            let low = xs.iter().copied().fold(0.0f32, f32::min);
            let high = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            0.5 * ((high - low + dmin) / levels + d) * 1.001
        });
        let rmse = relative_rmse(&x, &y);
        assert!(rmse < max_rmse, "{ty}: relative RMSE {rmse}");
        // The sub-block scales and mins really are 6-bit values used as packed.
        let scales: &[u8; 12] = bytes[4..16].try_into().unwrap();
        assert!((0..8).any(|j| unpack_scale_min(scales, j).0 > 31));
    }
}

#[test]
fn q6_k_error_is_half_a_sub_block_step() {
    // Each 16-value sub-block's step d·sc covers amax/31, rounded up by at most one unit of d.
    let x = test_values(VALUES, 6);
    let (bytes, y) = round_trip(GgmlType::Q6_K, &x);
    assert_block_errors(GgmlType::Q6_K, &x, &y, 16, |sub, xs| {
        let block = &bytes[sub / 16 * 210..][..210];
        let d = f16_value([block[208], block[209]]);
        0.5 * (max_abs(xs) / 31.0 + d) * 1.001
    });
    let rmse = relative_rmse(&x, &y);
    assert!(rmse < 0.03, "Q6_K: relative RMSE {rmse}");
}

/// The f16 at byte `offset` of the `block`-th block of `bytes`.
fn block_f16(ty: GgmlType, bytes: &[u8], block: usize, offset: usize) -> f32 {
    let start = block * ty.block_bytes() + offset;
    f16_value([bytes[start], bytes[start + 1]])
}

#[test]
fn q2_k_error_is_half_a_sub_block_step() {
    // As Q4_K, over 16-value sub-blocks with 4-bit scales and mins and 3 steps.
    let x = test_values(VALUES, 7);
    let (bytes, y) = round_trip(GgmlType::Q2_K, &x);
    assert_block_errors(GgmlType::Q2_K, &x, &y, 16, |sub, xs| {
        let d = block_f16(GgmlType::Q2_K, &bytes, sub / 16, 80);
        let dmin = block_f16(GgmlType::Q2_K, &bytes, sub / 16, 82);
        let low = xs.iter().copied().fold(0.0f32, f32::min);
        let high = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        0.5 * ((high - low + dmin) / 3.0 + d) * 1.001
    });
    let rmse = relative_rmse(&x, &y);
    assert!(rmse < 0.35, "Q2_K: relative RMSE {rmse}");
}

#[test]
fn q3_k_error_is_half_a_sub_block_step() {
    // As Q6_K: each 16-value sub-block's step covers amax/3, rounded up by at most one unit of d.
    let x = test_values(VALUES, 8);
    let (bytes, y) = round_trip(GgmlType::Q3_K, &x);
    assert_block_errors(GgmlType::Q3_K, &x, &y, 16, |sub, xs| {
        let d = block_f16(GgmlType::Q3_K, &bytes, sub / 16, 108);
        0.5 * (max_abs(xs) / 3.0 + d) * 1.001
    });
    let rmse = relative_rmse(&x, &y);
    assert!(rmse < 0.22, "Q3_K: relative RMSE {rmse}");
}

/// The widest distance from a value in [-127, 127] to the nearest entry of the IQ4 table:
/// 14, above its top entry 113 (the widest gap between entries is 24).
const IQ4_WORST_ROUNDING: f32 = 14.0;

#[test]
fn iq4_nl_error_is_within_the_widest_table_gap() {
    // d = amax/127 (f16): every value lies within the table's range of d, so within 14·|d|.
    let x = test_values(VALUES, 9);
    let (_, y) = round_trip(GgmlType::IQ4_NL, &x);
    assert_block_errors(GgmlType::IQ4_NL, &x, &y, 32, |_, xs| {
        IQ4_WORST_ROUNDING * max_abs(xs) / 127.0 * 1.001 + 127.0 * F16_SUBNORMAL_HALF_STEP
    });
    let rmse = relative_rmse(&x, &y);
    assert!(rmse < 0.1, "IQ4_NL: relative RMSE {rmse}");
}

#[test]
fn iq4_xs_error_is_within_the_widest_table_gap_of_the_rounded_scale() {
    // Each 32-value block wants the scale amax/127 and gets a multiple s of d within d of it:
    // values within the table's range of s round within 14·|s|, those beyond it (|s| smaller
    // than wanted) are off by at most 127·d more.
    let x = test_values(VALUES, 10);
    let (bytes, y) = round_trip(GgmlType::IQ4_XS, &x);
    assert_block_errors(GgmlType::IQ4_XS, &x, &y, 32, |b, xs| {
        let d = block_f16(GgmlType::IQ4_XS, &bytes, b / 8, 0);
        (IQ4_WORST_ROUNDING * (max_abs(xs) / 127.0 + d) + 127.0 * d) * 1.001
    });
    let rmse = relative_rmse(&x, &y);
    assert!(rmse < 0.1, "IQ4_XS: relative RMSE {rmse}");
}

#[test]
fn mxfp4_error_is_within_half_the_widest_table_gap() {
    // The doubled FP4 entries are at most 4 apart (8 to 12) and the scale d = 2^(e - 128) is
    // the smallest power of two with 12·d covering the largest magnitude: error <= 2·d.
    let x = test_values(VALUES, 11);
    let (bytes, y) = round_trip(GgmlType::MXFP4, &x);
    assert_block_errors(GgmlType::MXFP4, &x, &y, 32, |b, _| 2.0 * mxfp4::e8m0_half(bytes[b * 17]));
    let rmse = relative_rmse(&x, &y);
    assert!(rmse < 0.2, "MXFP4: relative RMSE {rmse}");
}

#[test]
fn zero_blocks_quantize_to_zero() {
    for ty in SUPPORTED_TYPES {
        let (_, y) = round_trip(ty, &[0.0; 256]);
        assert!(y.iter().all(|&v| v == 0.0), "{ty}");
    }
}

#[test]
fn bad_lengths_and_values_are_errors() {
    assert_eq!(
        quantize_row(GgmlType::Q4_K, &[0.0; 32]),
        Err(QuantError::NotWholeBlocks { type_name: "Q4_K", count: 32, block_len: 256 })
    );
    assert!(matches!(
        quantize_row(GgmlType::Q8_0, &[f32::NAN; 32]),
        Err(QuantError::NotRepresentable { index: 0, .. })
    ));
    assert!(matches!(quantize_row(GgmlType::Q8_0, &[1e30; 32]), Err(QuantError::NotRepresentable { .. })));
    let mut out = [0.0; 64];
    assert_eq!(
        dequantize_row(GgmlType::Q8_0, &[0; 34], &mut out),
        Err(QuantError::ByteLength { type_name: "Q8_0", count: 64, expected: 68, actual: 34 })
    );
    assert_eq!(
        dequantize_row(GgmlType::IQ2_XXS, &[0; 66], &mut [0.0; 256]),
        Err(QuantError::Unsupported { type_name: "IQ2_XXS" })
    );
}

#[test]
fn random_blocks_are_valid_deterministic_and_varied() {
    for ty in SUPPORTED_TYPES {
        let (row_len, rows) = (512, 3);
        let bytes = random_quantized(ty, row_len, rows, 42);
        assert_eq!(bytes.len() as u64, ty.row_bytes(row_len as u64).unwrap() * rows as u64, "{ty}");
        assert_eq!(bytes, random_quantized(ty, row_len, rows, 42), "{ty}: not deterministic");
        assert_ne!(bytes, random_quantized(ty, row_len, rows, 43), "{ty}: seed ignored");
        let values = dequantize(ty, &bytes).unwrap();
        assert!(values.iter().all(|v| v.is_finite() && v.abs() <= 1.5), "{ty}: value out of range");
        let mean_abs = values.iter().map(|v| v.abs()).sum::<f32>() / values.len() as f32;
        assert!(mean_abs > 0.1, "{ty}: values too small ({mean_abs})");
        let mean = values.iter().sum::<f32>() / values.len() as f32;
        assert!(mean.abs() < 0.25, "{ty}: values not centred ({mean})");
    }
}

#[test]
fn block_structs_match_ggml_type_sizes() {
    fn check<B: QuantBlock>() {
        assert_eq!(std::mem::size_of::<B>(), B::TYPE.block_bytes(), "{}", B::TYPE);
        assert_eq!(B::LEN, B::TYPE.block_len(), "{}", B::TYPE);
        assert_eq!(std::mem::align_of::<B>(), 1, "{}", B::TYPE);
    }
    check::<BlockQ4_0>();
    check::<BlockQ4_1>();
    check::<BlockQ5_0>();
    check::<BlockQ5_1>();
    check::<BlockQ8_0>();
    check::<BlockQ4K>();
    check::<BlockQ5K>();
    check::<BlockQ6K>();
    check::<BlockQ2K>();
    check::<BlockQ3K>();
    check::<BlockIq4Nl>();
    check::<BlockIq4Xs>();
    check::<BlockMxfp4>();
}
