//! What a caller asks of the sampler, and the uniform block the sampling kernels read.

use bytemuck::{Pod, Zeroable};

/// The most likely tokens that top-k, top-p and min-p choose among: top-k is capped at this.
pub const MAX_CANDIDATES: u32 = 256;

/// How the next token is chosen, in llama.cpp's sampler order: repetition penalty → top-k →
/// top-p → min-p → temperature → draw.
///
/// Temperature-only sampling (top-k, top-p and min-p off) draws from the full vocabulary
/// exactly. With any of the three on, the draw is among the [`MAX_CANDIDATES`] most likely
/// tokens: top-k above that is capped; top-p without top-k measures probabilities over the
/// whole vocabulary but cuts its nucleus at [`MAX_CANDIDATES`] tokens; min-p keeps at most that
/// many.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SamplingParams {
    /// 0 (or less) = greedy: the argmax of the penalized logits, ties to the lowest id.
    pub temperature: f32,
    /// 0 = off.
    pub top_k: u32,
    /// 1 = off: keep the smallest most-likely prefix whose probability reaches top_p.
    pub top_p: f32,
    /// 0 = off: keep tokens at least min_p times as likely as the most likely one.
    pub min_p: f32,
    /// 1 = off: a positive logit of a recent token is divided by it, any other multiplied.
    pub repetition_penalty: f32,
    /// How many of the latest tokens (prompt included) the penalty looks at; capped at the
    /// sampler's history capacity.
    pub repeat_last_n: u32,
    pub seed: u64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            repeat_last_n: 64,
            seed: 0,
        }
    }
}

/// Which path the kernels take (the `MODE_*` constants of sampling_common.wgsl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum SamplingMode {
    Greedy = 0,
    FullDistribution = 1,
    Candidates = 2,
}

/// `SamplingUniform` of sampling_common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub(super) struct SamplingUniform {
    pub mode: u32,
    pub top_k: u32,
    pub top_p: f32,
    pub min_p_log: f32,
    pub temperature: f32,
    pub penalty: f32,
    pub repeat_last_n: u32,
    pub seed_lo: u32,
    pub seed_hi: u32,
    pub _pad: [u32; 3],
}

#[cfg(test)]
#[test]
fn sampling_uniform_match_wgsl() {
    crate::kernels::wgsl_layout::assert_wgsl_layout!(SamplingUniform, "sampling_common.wgsl", "SamplingUniform", { mode: u32, top_k: u32, top_p: f32, min_p_log: f32, temperature: f32, penalty: f32, repeat_last_n: u32, seed_lo: u32, seed_hi: u32 });
}

impl SamplingParams {
    pub fn greedy() -> Self {
        Self::default()
    }

    /// The kernels' view of these parameters for a vocabulary of `vocab_size` tokens: off
    /// switches and out-of-range values (NaN included) normalized, so the kernels never divide
    /// by zero or take the log of a non-positive number.
    pub(super) fn uniform(&self, vocab_size: u32, history_capacity: u32) -> SamplingUniform {
        // NaN is greedy too.
        let greedy = self.temperature.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater);
        // Top-k of the whole vocabulary or more keeps everything.
        let top_k = if self.top_k >= vocab_size { 0 } else { self.top_k.min(MAX_CANDIDATES) };
        let top_p_on = self.top_p < 1.0;
        let min_p_on = self.min_p > 0.0;
        let mode = if greedy {
            SamplingMode::Greedy
        } else if top_k == 0 && !top_p_on && !min_p_on {
            SamplingMode::FullDistribution
        } else {
            SamplingMode::Candidates
        };
        let penalty = self.repetition_penalty;
        let penalty_on = penalty.is_finite() && penalty > 0.0 && penalty != 1.0 && self.repeat_last_n > 0;
        SamplingUniform {
            mode: mode as u32,
            top_k,
            top_p: if top_p_on { self.top_p } else { 1.0 },
            min_p_log: if min_p_on { self.min_p.ln() } else { f32::MIN },
            temperature: if greedy { 1.0 } else { self.temperature },
            penalty: if penalty_on { penalty } else { 1.0 },
            repeat_last_n: if penalty_on { self.repeat_last_n.min(history_capacity) } else { 0 },
            seed_lo: self.seed as u32,
            seed_hi: (self.seed >> 32) as u32,
            _pad: [0; 3],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(params: SamplingParams) -> u32 {
        params.uniform(1000, 64).mode
    }

    #[test]
    fn modes_follow_llama_cpp_off_switches() {
        let sampling = SamplingParams { temperature: 0.8, ..SamplingParams::default() };
        assert_eq!(mode(SamplingParams::greedy()), SamplingMode::Greedy as u32);
        assert_eq!(
            mode(SamplingParams { temperature: -1.0, top_k: 5, ..SamplingParams::default() }),
            SamplingMode::Greedy as u32
        );
        assert_eq!(
            mode(SamplingParams { temperature: f32::NAN, ..SamplingParams::default() }),
            SamplingMode::Greedy as u32
        );
        assert_eq!(mode(sampling.clone()), SamplingMode::FullDistribution as u32);
        assert_eq!(
            mode(SamplingParams { top_k: 1000, ..sampling.clone() }),
            SamplingMode::FullDistribution as u32,
            "top-k of the whole vocabulary is off"
        );
        assert_eq!(
            mode(SamplingParams { top_p: f32::NAN, min_p: f32::NAN, ..sampling.clone() }),
            SamplingMode::FullDistribution as u32
        );
        assert_eq!(mode(SamplingParams { top_k: 40, ..sampling.clone() }), SamplingMode::Candidates as u32);
        assert_eq!(mode(SamplingParams { top_p: 0.9, ..sampling.clone() }), SamplingMode::Candidates as u32);
        assert_eq!(mode(SamplingParams { min_p: 0.05, ..sampling }), SamplingMode::Candidates as u32);
    }

    #[test]
    fn values_are_capped_and_normalized() {
        let params = SamplingParams {
            temperature: 0.5,
            top_k: 999,
            min_p: 0.1,
            repetition_penalty: 1.3,
            repeat_last_n: 500,
            seed: 0x1234_5678_9abc_def0,
            ..SamplingParams::default()
        };
        let uniform = params.uniform(1000, 64);
        assert_eq!(uniform.top_k, MAX_CANDIDATES);
        assert_eq!(uniform.min_p_log, 0.1f32.ln());
        assert_eq!(uniform.repeat_last_n, 64);
        assert_eq!((uniform.seed_lo, uniform.seed_hi), (0x9abc_def0, 0x1234_5678));
        for penalty in [1.0, 0.0, -2.0, f32::INFINITY, f32::NAN] {
            let uniform = SamplingParams { repetition_penalty: penalty, ..params.clone() }.uniform(1000, 64);
            assert_eq!((uniform.penalty, uniform.repeat_last_n), (1.0, 0), "penalty {penalty} is off");
        }
        assert_eq!(
            SamplingParams::greedy().uniform(1000, 64).temperature,
            1.0,
            "no division by a zero temperature"
        );
    }

    #[test]
    fn missing_fields_deserialize_to_defaults() {
        let params: SamplingParams = serde_json::from_str(r#"{"temperature": 0.7, "top_k": 40}"#).unwrap();
        assert_eq!(params, SamplingParams { temperature: 0.7, top_k: 40, ..SamplingParams::default() });
    }
}
