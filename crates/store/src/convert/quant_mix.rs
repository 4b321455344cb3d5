//! The weight type of each tensor of a safetensors model converted to a target quantization.
//! Q4_K_M follows llama.cpp's choice (`llama_tensor_get_type` in `llama-quant.cpp`): most
//! matrices in Q4_K, the output head in Q6_K, and `attn_v` and `ffn_down` in Q6_K in the first
//! and last eighth of the layers and every third layer between, where quantization error
//! hurts most; a fused `attn_qkv` (Phi 3) in Q5_K.

use doppler_engine::gguf::GgmlType;

use super::TargetQuant;

impl TargetQuant {
    /// Every target, by its name, in the order a picker offers them.
    pub const ALL: [TargetQuant; 4] =
        [TargetQuant::Q4_K_M, TargetQuant::Q6_K, TargetQuant::Q8_0, TargetQuant::F16];

    /// llama.cpp's name for the mix (`Q4_K_M`…).
    pub fn name(self) -> &'static str {
        match self {
            TargetQuant::Q4_K_M => "Q4_K_M",
            TargetQuant::Q6_K => "Q6_K",
            TargetQuant::Q8_0 => "Q8_0",
            TargetQuant::F16 => "F16",
        }
    }

    /// llama.cpp's `llama_ftype` number, written as `general.file_type`.
    pub(crate) fn file_type(self) -> u32 {
        match self {
            TargetQuant::F16 => 1,
            TargetQuant::Q8_0 => 7,
            TargetQuant::Q4_K_M => 15,
            TargetQuant::Q6_K => 18,
        }
    }

    /// At most the bytes `elements` weights take in this target (the Q4_K_M mix counted as if
    /// all Q6_K; vectors, F32 in any target, are too few to count).
    pub(crate) fn max_bytes(self, elements: u64) -> u64 {
        let ty = match self {
            TargetQuant::F16 => GgmlType::F16,
            TargetQuant::Q8_0 => GgmlType::Q8_0,
            TargetQuant::Q6_K | TargetQuant::Q4_K_M => GgmlType::Q6_K,
        };
        (elements as u128 * ty.block_bytes() as u128).div_ceil(ty.block_len() as u128) as u64
    }

    /// "Q4_K_M, Q6_K, Q8_0 and F16", for messages.
    pub(crate) fn names_listed() -> String {
        let names = TargetQuant::ALL.map(TargetQuant::name);
        let (last, rest) = names.split_last().expect("several targets");
        format!("{} and {last}", rest.join(", "))
    }

    /// The type tensor `name` (ours, `blk.N.…`) of `shape` (outermost first) is written in, in a
    /// model of `n_layers` layers whose head is the embedding when `tied_embeddings`. Vectors stay
    /// F32; a matrix whose rows are not whole blocks of its type takes Q8_0, or F16 where its
    /// rows are not whole Q8_0 blocks either.
    pub(crate) fn tensor_type(
        self,
        name: &str,
        shape: &[u64],
        n_layers: u64,
        tied_embeddings: bool,
    ) -> GgmlType {
        let [_, row_len] = shape else { return GgmlType::F32 };
        let wanted = match self {
            TargetQuant::F16 => GgmlType::F16,
            TargetQuant::Q8_0 => GgmlType::Q8_0,
            TargetQuant::Q6_K => GgmlType::Q6_K,
            TargetQuant::Q4_K_M => q4_k_m_type(name, n_layers, tied_embeddings),
        };
        [wanted, GgmlType::Q8_0, GgmlType::F16]
            .into_iter()
            .find(|ty| row_len.is_multiple_of(ty.block_len() as u64))
            .expect("F16 fits any row")
    }
}

fn q4_k_m_type(name: &str, n_layers: u64, tied_embeddings: bool) -> GgmlType {
    let is_head = name == "output.weight" || (tied_embeddings && name == "token_embd.weight");
    let layer = name.strip_prefix("blk.").and_then(|rest| rest.split_once('.'));
    let sensitive = match layer {
        Some((layer, rest)) if rest.starts_with("attn_v.") || rest.starts_with("ffn_down.") => {
            layer.parse().is_ok_and(|layer| more_bits(layer, n_layers))
        }
        _ => false,
    };
    let fused_qkv = layer.is_some_and(|(_, rest)| rest.starts_with("attn_qkv."));
    if is_head || sensitive {
        GgmlType::Q6_K
    } else if fused_qkv {
        GgmlType::Q5_K
    } else {
        GgmlType::Q4_K
    }
}

/// llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every third layer
/// between.
fn more_bits(layer: u64, n_layers: u64) -> bool {
    let eighth = n_layers / 8;
    layer < eighth || layer >= 7 * n_layers / 8 || (layer - eighth) % 3 == 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_k_m_gives_more_bits_to_the_head_and_llama_cpps_layers() {
        let q4 = |name: &str, tied| TargetQuant::Q4_K_M.tensor_type(name, &[4096, 4096], 32, tied);
        assert_eq!(q4("output.weight", false), GgmlType::Q6_K);
        assert_eq!(q4("token_embd.weight", false), GgmlType::Q4_K);
        assert_eq!(q4("token_embd.weight", true), GgmlType::Q6_K);
        assert_eq!(q4("blk.0.attn_q.weight", false), GgmlType::Q4_K);
        // 32 layers: 0..4 and 28..32, and 4 + 3k + 2 between (6, 9, …, 27).
        let more: Vec<u64> = (0..32)
            .filter(|layer| q4(&format!("blk.{layer}.ffn_down.weight"), false) == GgmlType::Q6_K)
            .collect();
        assert_eq!(more, [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]);
        let attn_v: Vec<u64> = (0..32)
            .filter(|layer| q4(&format!("blk.{layer}.attn_v.weight"), false) == GgmlType::Q6_K)
            .collect();
        assert_eq!(attn_v, more);
        assert_eq!(q4("blk.3.attn_qkv.weight", false), GgmlType::Q5_K, "Phi 3's fused qkv");
        assert_eq!(q4("blk.6.ffn_up.weight", false), GgmlType::Q4_K);
    }

    #[test]
    fn rows_that_are_not_whole_blocks_fall_back() {
        let ty =
            |quant: TargetQuant, row_len| quant.tensor_type("blk.0.attn_q.weight", &[64, row_len], 2, false);
        assert_eq!(ty(TargetQuant::Q4_K_M, 512), GgmlType::Q4_K);
        assert_eq!(ty(TargetQuant::Q4_K_M, 384), GgmlType::Q8_0);
        assert_eq!(ty(TargetQuant::Q6_K, 96), GgmlType::Q8_0);
        assert_eq!(ty(TargetQuant::Q4_K_M, 100), GgmlType::F16);
        assert_eq!(ty(TargetQuant::Q8_0, 100), GgmlType::F16);
        assert_eq!(TargetQuant::Q4_K_M.tensor_type("output_norm.weight", &[512], 2, false), GgmlType::F32);
    }

    #[test]
    fn the_size_bound_is_the_widest_type_of_the_mix() {
        assert_eq!(TargetQuant::F16.max_bytes(256), 512);
        assert_eq!(TargetQuant::Q8_0.max_bytes(256), 272);
        assert_eq!(TargetQuant::Q4_K_M.max_bytes(256), 210);
    }

    #[test]
    fn names_parse_back_and_aliases_are_llama_cpps() {
        for quant in TargetQuant::ALL {
            assert_eq!(quant.name().parse::<TargetQuant>().unwrap(), quant);
        }
        assert_eq!("q4_k".parse::<TargetQuant>().unwrap(), TargetQuant::Q4_K_M);
        let error = "Q2_K".parse::<TargetQuant>().unwrap_err().to_string();
        assert!(error.contains("Q4_K_M, Q6_K, Q8_0 and F16"), "{error}");
    }
}
