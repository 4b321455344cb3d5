//! Exact conversion of the symmetric 32-value types to Q8_0: Q4_0 and Q5_0 quants (q - 8 and
//! q - 16) fit an i8 under the same f16 scale, so the Q8_0 block holds the very same values.
//! Lets matrices of these types share one stacked GPU binding, and so one decode dispatch,
//! with a Q8_0 neighbour (Gemma 3's q and k beside a Q8_0 v in llama.cpp's Q4_K_M mix).

use super::{
    check_whole_blocks,
    legacy::{five_bit, nibble},
    BlockQ4_0, BlockQ5_0, BlockQ8_0, QuantError,
};
use crate::gguf::GgmlType;

/// Whether `ty` widens exactly to Q8_0 (Q8_0 itself included).
pub fn widens_to_q8_0(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q8_0 | GgmlType::Q5_0 | GgmlType::Q4_0)
}

/// Whole blocks of `ty` (see `widens_to_q8_0`) as Q8_0 blocks of the same values.
pub fn widen_to_q8_0(ty: GgmlType, bytes: &[u8]) -> Result<Vec<u8>, QuantError> {
    if !widens_to_q8_0(ty) {
        return Err(QuantError::Unsupported { type_name: ty.name() });
    }
    check_whole_blocks(ty, bytes)?;
    let widen = |d: [u8; 2], quant: &dyn Fn(usize) -> i8| BlockQ8_0 { d, qs: std::array::from_fn(quant) };
    // Blocks have alignment 1, so a byte slice of whole blocks casts.
    let blocks: Vec<BlockQ8_0> = match ty {
        GgmlType::Q4_0 => bytemuck::cast_slice::<u8, BlockQ4_0>(bytes)
            .iter()
            .map(|b| widen(b.d, &|j| nibble(&b.qs, j) as i8 - 8))
            .collect(),
        GgmlType::Q5_0 => bytemuck::cast_slice::<u8, BlockQ5_0>(bytes)
            .iter()
            .map(|b| widen(b.d, &|j| five_bit(&b.qs, b.qh, j) as i8 - 16))
            .collect(),
        _ => return Ok(bytes.to_vec()),
    };
    Ok(bytemuck::cast_slice(&blocks).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{dequantize, random_quantized};

    #[test]
    fn widened_blocks_hold_the_same_values() {
        for ty in [GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0] {
            let bytes = random_quantized(ty, 256, 3, 7);
            let widened = widen_to_q8_0(ty, &bytes).unwrap();
            assert_eq!(widened.len(), 3 * 8 * 34, "{}", ty.name());
            assert_eq!(
                dequantize(GgmlType::Q8_0, &widened).unwrap(),
                dequantize(ty, &bytes).unwrap(),
                "{}",
                ty.name()
            );
        }
    }

    #[test]
    fn other_types_and_partial_blocks_are_errors() {
        assert!(widen_to_q8_0(GgmlType::Q4_K, &[0; 144]).is_err());
        assert!(widen_to_q8_0(GgmlType::Q5_0, &[0; 23]).is_err());
        assert!(!widens_to_q8_0(GgmlType::Q4_1));
    }
}
