use super::GgufError;

/// A ggml tensor element type, with the numeric ids ggml writes into GGUF files.
///
/// Ids that ggml retired (4, 5, 31–33, 36–38) are rejected like unknown ones.
#[allow(non_camel_case_types)]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1_M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
    NVFP4,
    Q1_0,
}

/// One row per type: the type, its ggml id, name, elements per block and bytes per block
/// (sizes as in ggml-common.h's block structs).
const TRAITS: &[(GgmlType, u32, &str, usize, usize)] = &[
    (GgmlType::F32, 0, "F32", 1, 4),
    (GgmlType::F16, 1, "F16", 1, 2),
    (GgmlType::Q4_0, 2, "Q4_0", 32, 18),
    (GgmlType::Q4_1, 3, "Q4_1", 32, 20),
    (GgmlType::Q5_0, 6, "Q5_0", 32, 22),
    (GgmlType::Q5_1, 7, "Q5_1", 32, 24),
    (GgmlType::Q8_0, 8, "Q8_0", 32, 34),
    (GgmlType::Q8_1, 9, "Q8_1", 32, 36),
    (GgmlType::Q2_K, 10, "Q2_K", 256, 84),
    (GgmlType::Q3_K, 11, "Q3_K", 256, 110),
    (GgmlType::Q4_K, 12, "Q4_K", 256, 144),
    (GgmlType::Q5_K, 13, "Q5_K", 256, 176),
    (GgmlType::Q6_K, 14, "Q6_K", 256, 210),
    (GgmlType::Q8_K, 15, "Q8_K", 256, 292),
    (GgmlType::IQ2_XXS, 16, "IQ2_XXS", 256, 66),
    (GgmlType::IQ2_XS, 17, "IQ2_XS", 256, 74),
    (GgmlType::IQ3_XXS, 18, "IQ3_XXS", 256, 98),
    (GgmlType::IQ1_S, 19, "IQ1_S", 256, 50),
    (GgmlType::IQ4_NL, 20, "IQ4_NL", 32, 18),
    (GgmlType::IQ3_S, 21, "IQ3_S", 256, 110),
    (GgmlType::IQ2_S, 22, "IQ2_S", 256, 82),
    (GgmlType::IQ4_XS, 23, "IQ4_XS", 256, 136),
    (GgmlType::I8, 24, "I8", 1, 1),
    (GgmlType::I16, 25, "I16", 1, 2),
    (GgmlType::I32, 26, "I32", 1, 4),
    (GgmlType::I64, 27, "I64", 1, 8),
    (GgmlType::F64, 28, "F64", 1, 8),
    (GgmlType::IQ1_M, 29, "IQ1_M", 256, 56),
    (GgmlType::BF16, 30, "BF16", 1, 2),
    (GgmlType::TQ1_0, 34, "TQ1_0", 256, 54),
    (GgmlType::TQ2_0, 35, "TQ2_0", 256, 66),
    (GgmlType::MXFP4, 39, "MXFP4", 32, 17),
    (GgmlType::NVFP4, 40, "NVFP4", 64, 36),
    (GgmlType::Q1_0, 41, "Q1_0", 128, 18),
];

impl GgmlType {
    /// Every known type, in id order.
    pub fn all() -> impl Iterator<Item = GgmlType> {
        TRAITS.iter().map(|row| row.0)
    }

    pub fn from_id(id: u32) -> Result<Self, GgufError> {
        TRAITS.iter().find(|row| row.1 == id).map(|row| row.0).ok_or(GgufError::UnknownGgmlType { id })
    }

    fn traits(self) -> &'static (GgmlType, u32, &'static str, usize, usize) {
        TRAITS.iter().find(|row| row.0 == self).expect("every GgmlType variant has a TRAITS row")
    }

    pub fn id(self) -> u32 {
        self.traits().1
    }

    pub fn name(self) -> &'static str {
        self.traits().2
    }

    /// Elements per block (1 for plain scalar types).
    pub fn block_len(self) -> usize {
        self.traits().3
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        self.traits().4
    }

    /// Bytes taken by a row of `row_len` elements; rows must hold whole blocks.
    pub fn row_bytes(self, row_len: u64) -> Result<u64, GgufError> {
        let block_len = self.block_len() as u64;
        if !row_len.is_multiple_of(block_len) {
            return Err(GgufError::RowNotWholeBlocks {
                type_name: self.name(),
                row_len,
                block_len: self.block_len(),
            });
        }
        (row_len / block_len)
            .checked_mul(self.block_bytes() as u64)
            .ok_or(GgufError::RowTooLarge { type_name: self.name(), row_len })
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        for ty in GgmlType::all() {
            assert_eq!(GgmlType::from_id(ty.id()).unwrap(), ty);
        }
        let mut ids: Vec<u32> = GgmlType::all().map(GgmlType::id).collect();
        ids.dedup();
        assert_eq!(ids.len(), TRAITS.len());
    }

    #[test]
    fn retired_and_unknown_ids_are_rejected() {
        for id in [4, 5, 31, 32, 33, 36, 37, 38, 42, u32::MAX] {
            assert!(matches!(
                GgmlType::from_id(id),
                Err(GgufError::UnknownGgmlType { id: got }) if got == id
            ));
        }
    }

    #[test]
    fn row_bytes_counts_whole_blocks() {
        assert_eq!(GgmlType::Q4_K.row_bytes(640 * 4).unwrap(), 10 * 144);
        assert_eq!(GgmlType::Q8_0.row_bytes(640).unwrap(), 20 * 34);
        assert_eq!(GgmlType::F16.row_bytes(3).unwrap(), 6);
        assert!(matches!(
            GgmlType::Q4_K.row_bytes(640),
            Err(GgufError::RowNotWholeBlocks { row_len: 640, block_len: 256, .. })
        ));
        assert!(matches!(GgmlType::F32.row_bytes(u64::MAX), Err(GgufError::RowTooLarge { .. })));
    }
}
