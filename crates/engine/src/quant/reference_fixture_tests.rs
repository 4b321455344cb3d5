//! The CPU dequantizers against fixtures made by gguf-py's `gguf.quants.dequantize`, an
//! implementation that is not ours (tools/quant_reference/make.py): random blocks with scales
//! of both signs and one zero scale.

use super::*;

/// `tests/data/quant/<TYPE>.bin`: u32 block count, the blocks, then one f32 per value.
fn check_fixture(ty: GgmlType, fixture: &[u8]) {
    let (count, rest) = fixture.split_at(4);
    let blocks = u32::from_le_bytes(count.try_into().unwrap()) as usize;
    let (bytes, expected) = rest.split_at(blocks * ty.block_bytes());
    let expected: Vec<f32> =
        expected.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(expected.len(), blocks * ty.block_len(), "{ty}: fixture length");
    let got = dequantize(ty, bytes).unwrap();
    for (i, (&g, &e)) in got.iter().zip(&expected).enumerate() {
        assert!(
            (g - e).abs() <= 1e-6 * e.abs(),
            "{ty}: value {i} (block {}): got {g}, gguf-py {e}",
            i / ty.block_len()
        );
    }
    assert!(expected.iter().any(|&e| e != 0.0), "{ty}: fixture all zero");
}

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/quant/", $name, ".bin"))
    };
}

#[test]
fn q2_k_matches_gguf_py() {
    check_fixture(GgmlType::Q2_K, fixture!("Q2_K"));
}

#[test]
fn q3_k_matches_gguf_py() {
    check_fixture(GgmlType::Q3_K, fixture!("Q3_K"));
}

#[test]
fn iq4_nl_matches_gguf_py() {
    check_fixture(GgmlType::IQ4_NL, fixture!("IQ4_NL"));
}

#[test]
fn iq4_xs_matches_gguf_py() {
    check_fixture(GgmlType::IQ4_XS, fixture!("IQ4_XS"));
}

#[test]
fn mxfp4_matches_gguf_py() {
    check_fixture(GgmlType::MXFP4, fixture!("MXFP4"));
}
