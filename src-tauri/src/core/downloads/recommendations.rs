//! The chat models a new user is offered, by memory tier: a short curated list of instruction
//! models in architectures the engine runs, each in llama.cpp's Q4_K_M (the usual balance of
//! size and quality), from repositories that publish single-file GGUFs.

use doppler_engine::gpu::MemoryTier;

/// A curated model: what to call it, where it is, which quantization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CuratedModel {
    pub title: &'static str,
    pub repo: &'static str,
    pub quantization: &'static str,
}

const GEMMA_3_1B: CuratedModel =
    CuratedModel { title: "Gemma 3 1B", repo: "ggml-org/gemma-3-1b-it-GGUF", quantization: "Q4_K_M" };
const GEMMA_3_4B: CuratedModel =
    CuratedModel { title: "Gemma 3 4B", repo: "ggml-org/gemma-3-4b-it-GGUF", quantization: "Q4_K_M" };
const LLAMA_3_2_1B: CuratedModel = CuratedModel {
    title: "Llama 3.2 1B",
    repo: "bartowski/Llama-3.2-1B-Instruct-GGUF",
    quantization: "Q4_K_M",
};
const LLAMA_3_2_3B: CuratedModel = CuratedModel {
    title: "Llama 3.2 3B",
    repo: "bartowski/Llama-3.2-3B-Instruct-GGUF",
    quantization: "Q4_K_M",
};
const QWEN_2_5_7B: CuratedModel =
    CuratedModel { title: "Qwen2.5 7B", repo: "bartowski/Qwen2.5-7B-Instruct-GGUF", quantization: "Q4_K_M" };

/// Best first. A CPU-emulated adapter (or none known) gets the small models that answer at a
/// readable pace there; unified memory and small GPUs the 3B–4B ones; 16 GiB GPUs a 7B.
pub fn curated_for(tier: Option<MemoryTier>) -> &'static [CuratedModel] {
    match tier {
        None | Some(MemoryTier::Cpu) => &[GEMMA_3_1B, LLAMA_3_2_1B],
        Some(MemoryTier::Unified | MemoryTier::DedicatedSmall) => &[GEMMA_3_4B, LLAMA_3_2_3B, GEMMA_3_1B],
        Some(MemoryTier::DedicatedLarge) => &[QWEN_2_5_7B, GEMMA_3_4B, LLAMA_3_2_3B],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tier_gets_a_short_list_of_q4_k_m_models() {
        let tiers = [
            None,
            Some(MemoryTier::Cpu),
            Some(MemoryTier::Unified),
            Some(MemoryTier::DedicatedSmall),
            Some(MemoryTier::DedicatedLarge),
        ];
        for tier in tiers {
            let list = curated_for(tier);
            assert!((2..=3).contains(&list.len()), "{tier:?}");
            assert!(list.iter().all(|model| model.quantization == "Q4_K_M" && model.repo.contains('/')));
        }
        assert_eq!(curated_for(Some(MemoryTier::DedicatedLarge))[0], QWEN_2_5_7B);
    }
}
