//! The GPU sampler against CPU references, with subgroup reductions where the adapter has
//! them and always with the shared-memory fallback (lavapipe in CI):
//! - greedy: exactly the argmax (ties to the lowest id) for vocabularies of 1 to 262,147 tokens;
//! - repetition penalty: exactly llama.cpp's rule, over the right window, across steps;
//! - top-k / top-p / min-p: exactly the CPU's candidate set, in order; probabilities within
//!   1e-5 absolute (f32 exp and sums on the GPU, f64 on the CPU);
//! - draws: each one is the token a CPU inverse-CDF draw with the same counter-based random
//!   number picks (up to draws within 1e-5 of a CDF step), and the frequencies of 2,000 draws
//!   (400 in candidate mode) pass a chi-square test at p = 0.001;
//! - the finish-step kernel's effect on the step, the next input, the ring and stop tokens.

mod support;

use std::sync::Arc;

use doppler_engine::{
    gpu::{Element, GpuContext, GpuOptions, GpuTensor, OpList, StepBuffer},
    kernels::{
        sampling::{GpuSampler, SamplingParams, MAX_CANDIDATES},
        KernelError,
    },
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use support::{
    compare::argmax,
    gpu::{gpu, without_subgroups},
};

const PROBABILITY_TOLERANCE: f64 = 1e-5;
/// A draw within this of a CDF step may round either way on the GPU.
const CDF_TOLERANCE: f64 = 1e-5;

/// The default context (subgroups where the adapter has them) and one without subgroups.
fn contexts() -> Vec<Arc<GpuContext>> {
    let contexts = vec![gpu(GpuOptions::default()), without_subgroups()];
    for ctx in &contexts {
        warm_up(ctx);
    }
    contexts
}

/// On lavapipe (Mesa 22.3) a context's sampling steps run about ten times slower until one
/// candidate-mode step has run in it (cause not established; steady-state speed is the same
/// either way): run one first, so the many-step tests take seconds rather than half a minute.
fn warm_up(ctx: &Arc<GpuContext>) {
    let harness = Harness::new(ctx, 16, &[], 16);
    harness.sample(&SamplingParams { temperature: 1.0, top_k: 2, ..SamplingParams::default() }, &[], 1);
}

fn label(ctx: &GpuContext) -> &'static str {
    if ctx.caps.subgroups {
        "subgroups"
    } else {
        "shared memory"
    }
}

struct Harness {
    ctx: Arc<GpuContext>,
    sampler: GpuSampler,
    logits: GpuTensor,
    step: StepBuffer,
    next_tokens: GpuTensor,
    ops: OpList,
}

impl Harness {
    fn new(ctx: &Arc<GpuContext>, vocab: usize, stop_tokens: &[u32], history_capacity: u32) -> Self {
        let sampler = GpuSampler::new(ctx, vocab as u32, stop_tokens, history_capacity).expect("sampler");
        // Two rows, the second huge: the sampler reads the first only.
        let logits = GpuTensor::zeroed(ctx, "logits", 2, vocab as u32, Element::F32);
        ctx.queue.write_buffer(
            logits.buffer(),
            vocab as u64 * 4,
            bytemuck::cast_slice(&vec![1e30f32; vocab]),
        );
        let step = StepBuffer::new(ctx);
        step.write(&ctx.queue, 0, 1);
        let next_tokens = GpuTensor::zeroed(ctx, "next tokens", 4, 1, Element::U32);
        let mut ops = OpList::new();
        sampler.record(ctx, &mut ops, &logits, &next_tokens, &step).expect("record");
        Self { ctx: ctx.clone(), sampler, logits, step, next_tokens, ops }
    }

    fn set_logits(&self, logits: &[f32]) {
        self.ctx.queue.write_buffer(self.logits.buffer(), 0, bytemuck::cast_slice(logits));
    }

    fn set_step(&self, step: [u32; 4]) {
        // The decode loop's counters too, which `StepBuffer::write` clears.
        self.ctx.queue.write_buffer(self.step.buffer(), 0, bytemuck::cast_slice(&step));
    }

    /// Runs `steps` sampling steps back to back in one submit, as GPU-resident decode does.
    fn run(&self, params: &SamplingParams, steps: usize) {
        self.sampler.set_params(&self.ctx.queue, params);
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        for _ in 0..steps {
            self.ops.encode(&mut encoder, 1, None);
        }
        self.ctx.queue.submit([encoder.finish()]);
    }

    /// Resets the step and history, runs `steps` steps and returns their tokens.
    fn sample(&self, params: &SamplingParams, prompt: &[u32], steps: usize) -> Vec<u32> {
        assert!(steps <= self.sampler.history_capacity() as usize);
        self.set_step([0, 1, 0, 0]);
        self.sampler.reset_history(&self.ctx.queue, prompt);
        self.run(params, steps);
        self.ctx.read_u32(self.sampler.sampled_tokens_buffer(), steps).unwrap()
    }

    fn step(&self) -> [u32; 4] {
        self.ctx.read_u32(self.step.buffer(), 4).unwrap().try_into().unwrap()
    }

    fn next_token(&self) -> u32 {
        self.ctx.read_u32(self.next_tokens.buffer(), 1).unwrap()[0]
    }
}

fn random_logits(rng: &mut StdRng, count: usize, scale: f32) -> Vec<f32> {
    (0..count).map(|_| rng.random_range(-scale..scale)).collect()
}

/// Logits with `hot` random tokens in [0, 6) over a background in [-7, -3), so a few dozen
/// tokens hold almost all of the probability, like a language model's.
fn peaked_logits(rng: &mut StdRng, count: usize, hot: usize) -> Vec<f32> {
    let mut logits: Vec<f32> = (0..count).map(|_| rng.random_range(-7.0..-3.0)).collect();
    for _ in 0..hot {
        let token = rng.random_range(0..count);
        logits[token] = rng.random_range(0.0..6.0);
    }
    logits
}

/// llama.cpp's repetition penalty over the distinct tokens of `window`.
fn penalize(logits: &[f32], window: &[u32], penalty: f32) -> Vec<f32> {
    let mut out = logits.to_vec();
    for &token in window {
        if let Some(&x) = logits.get(token as usize) {
            out[token as usize] = if x > 0.0 { x / penalty } else { x * penalty };
        }
    }
    out
}

/// The candidates llama.cpp's top-k → top-p → min-p → temperature chain keeps, best first
/// (ties to the lowest id), with their final probabilities; candidate mode cuts at 256.
fn candidates_reference(logits: &[f32], params: &SamplingParams) -> Vec<(u32, f64)> {
    let vocab = logits.len();
    let mut order: Vec<usize> = (0..vocab).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
    let top = logits[order[0]];
    let weight = |i: usize| ((logits[order[i]] - top) as f64).exp();
    let top_k_on = params.top_k > 0 && (params.top_k as usize) < vocab;
    let mut count = vocab.min(MAX_CANDIDATES as usize);
    let denominator: f64 = if top_k_on {
        count = count.min(params.top_k as usize);
        (0..count).map(weight).sum()
    } else {
        logits.iter().map(|&l| ((l - top) as f64).exp()).sum()
    };
    if params.top_p < 1.0 {
        let mut cumulative = 0.0;
        for i in 0..count {
            cumulative += weight(i) / denominator;
            assert!(
                (cumulative - params.top_p as f64).abs() > 1e-4,
                "test data puts a cumulative probability at top_p: pick others"
            );
            if cumulative >= params.top_p as f64 {
                count = i + 1;
                break;
            }
        }
    }
    if params.min_p > 0.0 {
        let threshold = top + params.min_p.ln();
        if let Some(cut) = (1..count).find(|&i| logits[order[i]] < threshold) {
            count = cut;
        }
    }
    let tempered: Vec<f64> =
        (0..count).map(|i| ((logits[order[i]] - top) as f64 / params.temperature as f64).exp()).collect();
    let total: f64 = tempered.iter().sum();
    (0..count).map(|i| (order[i] as u32, tempered[i] / total)).collect()
}

fn pcg_hash(v: u32) -> u32 {
    let state = v.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// The sampler's random number for step `counter` (sampling_rng.wgsl).
fn uniform_random(seed: u64, counter: u32) -> f64 {
    let key = pcg_hash((seed >> 32) as u32 ^ pcg_hash(seed as u32));
    (pcg_hash(key ^ pcg_hash(counter)) >> 8) as f64 / (1u64 << 24) as f64
}

/// The tokens an inverse-CDF draw of `u` over `distribution` (in its order) may pick: the
/// exact one, and its neighbour when `u` is within CDF_TOLERANCE of the step between them.
fn acceptable_draws(distribution: &[(u32, f64)], u: f64) -> Vec<u32> {
    let mut cumulative = 0.0;
    let mut accepted = Vec::new();
    for &(token, p) in distribution {
        let next = cumulative + p;
        if p > 0.0 && u >= cumulative - CDF_TOLERANCE && u < next + CDF_TOLERANCE {
            accepted.push(token);
        }
        cumulative = next;
    }
    accepted
}

/// softmax(logits / temperature) in token order.
fn full_distribution(logits: &[f32], temperature: f32) -> Vec<(u32, f64)> {
    let top = logits.iter().copied().fold(f32::MIN, f32::max) as f64;
    let weights: Vec<f64> = logits.iter().map(|&l| ((l as f64 - top) / temperature as f64).exp()).collect();
    let total: f64 = weights.iter().sum();
    weights.iter().enumerate().map(|(i, w)| (i as u32, w / total)).collect()
}

/// Asserts that every draw is one the CPU would make with the same random number.
fn assert_draws_match(label: &str, draws: &[u32], distribution: &[(u32, f64)], seed: u64) {
    for (step, &token) in draws.iter().enumerate() {
        let accepted = acceptable_draws(distribution, uniform_random(seed, step as u32));
        assert!(
            accepted.contains(&token),
            "{label}: step {step} drew {token}, the CPU draw is one of {accepted:?}"
        );
    }
}

/// Pearson's chi-square statistic of `draws` against `distribution`.
fn chi_square(draws: &[u32], distribution: &[(u32, f64)]) -> f64 {
    distribution
        .iter()
        .map(|&(token, p)| {
            let observed = draws.iter().filter(|&&t| t == token).count() as f64;
            let expected = p * draws.len() as f64;
            (observed - expected).powi(2) / expected
        })
        .sum()
}

#[test]
fn greedy_is_the_argmax_with_ties_to_the_lowest_id() {
    let mut rng = StdRng::seed_from_u64(1);
    for ctx in contexts() {
        for vocab in [1usize, 2, 7, 255, 256, 257, 1000, 1023, 1024, 1025, 4099, 262_144, 262_147] {
            let harness = Harness::new(&ctx, vocab, &[], 16);
            let mut logits = random_logits(&mut rng, vocab, 10.0);
            harness.set_logits(&logits);
            let drawn = harness.sample(&SamplingParams::greedy(), &[], 1)[0];
            assert_eq!(drawn, argmax(&logits), "{} vocab {vocab}: random logits", label(&ctx));
            // Ties across slices and within one: the lowest id wins.
            let ties: Vec<usize> =
                [vocab - 1, vocab / 2, vocab / 2 + 1, vocab / 3].into_iter().filter(|&t| t < vocab).collect();
            for &t in &ties {
                logits[t] = 20.0;
            }
            harness.set_logits(&logits);
            let drawn = harness.sample(&SamplingParams::greedy(), &[], 1)[0];
            assert_eq!(drawn as usize, *ties.iter().min().unwrap(), "{} vocab {vocab}: ties", label(&ctx));
        }
    }
}

#[test]
fn greedy_reads_nan_and_infinities_as_extremes() {
    for ctx in contexts() {
        let harness = Harness::new(&ctx, 3000, &[], 16);
        let mut logits = vec![f32::NAN; 3000];
        logits[2100] = -5.0;
        logits[17] = f32::NEG_INFINITY;
        harness.set_logits(&logits);
        assert_eq!(harness.sample(&SamplingParams::greedy(), &[], 1), [2100], "{}: NaN loses", label(&ctx));
        logits[2999] = f32::INFINITY;
        harness.set_logits(&logits);
        assert_eq!(harness.sample(&SamplingParams::greedy(), &[], 1), [2999], "{}: +inf wins", label(&ctx));
        harness.set_logits(&vec![f32::NEG_INFINITY; 3000]);
        assert_eq!(harness.sample(&SamplingParams::greedy(), &[], 1), [0], "{}: all -inf tie", label(&ctx));
        let sampling = SamplingParams { temperature: 1.0, ..SamplingParams::default() };
        let drawn = harness.sample(&sampling, &[], 8);
        assert!(
            drawn.iter().all(|&t| t < 3000),
            "{}: all -inf sampling stays in the vocabulary: {drawn:?}",
            label(&ctx)
        );
    }
}

#[test]
fn repetition_penalty_changes_exactly_the_window_tokens() {
    let mut rng = StdRng::seed_from_u64(2);
    for ctx in contexts() {
        let vocab = 3000;
        let harness = Harness::new(&ctx, vocab, &[], 64);
        // Negative logits too: those are multiplied, pushing them further down.
        for shift in [0.0, -3.0] {
            let logits: Vec<f32> = random_logits(&mut rng, vocab, 1.0).iter().map(|v| v + shift).collect();
            let mut order: Vec<u32> = (0..vocab as u32).collect();
            order.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
            // The prompt's window: best tokens (so ranks change), one repeated, one out of the
            // vocabulary; the token before the window must stay unpenalized.
            let outside = order[1];
            let window = [order[0], order[3], order[0], 5000, order[10], order[200], order[2]];
            let prompt: Vec<u32> = [outside].into_iter().chain(window).collect();
            harness.set_logits(&logits);
            let params = SamplingParams {
                temperature: 1.0,
                top_k: 256,
                repetition_penalty: 1.5,
                repeat_last_n: window.len() as u32,
                ..SamplingParams::default()
            };
            harness.sample(&params, &prompt, 1);
            let expected = candidates_reference(&penalize(&logits, &window, 1.5), &params);
            let actual = harness.sampler.last_candidates(&ctx).unwrap();
            assert_eq!(
                actual.iter().map(|c| c.0).collect::<Vec<_>>(),
                expected.iter().map(|c| c.0).collect::<Vec<_>>(),
                "{} shift {shift}: ranking",
                label(&ctx)
            );
            for ((_, p), (_, q)) in actual.iter().zip(&expected) {
                assert!(
                    (*p as f64 - q).abs() <= PROBABILITY_TOLERANCE,
                    "{} shift {shift}: probability {p} vs {q}",
                    label(&ctx)
                );
            }
            let greedy = SamplingParams {
                repetition_penalty: 1.5,
                repeat_last_n: window.len() as u32,
                ..SamplingParams::default()
            };
            assert_eq!(
                harness.sample(&greedy, &prompt, 1)[0],
                outside,
                "{} shift {shift}: greedy skips the penalized best",
                label(&ctx)
            );
        }
    }
}

#[test]
fn penalty_window_follows_generated_tokens_through_the_ring() {
    let mut rng = StdRng::seed_from_u64(3);
    for ctx in contexts() {
        let vocab = 1500;
        // A ring of 16 slots: a 40-token prompt wraps it before generation starts.
        let harness = Harness::new(&ctx, vocab, &[], 16);
        let logits = random_logits(&mut rng, vocab, 1.0);
        let mut order: Vec<u32> = (0..vocab as u32).collect();
        order.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
        let prompt: Vec<u32> = (0..40).map(|i| order[i % 12]).collect();
        harness.set_logits(&logits);
        let params =
            SamplingParams { repetition_penalty: 1.3, repeat_last_n: 8, ..SamplingParams::default() };
        let drawn = harness.sample(&params, &prompt, 16);
        let mut sequence = prompt.clone();
        for (step, &token) in drawn.iter().enumerate() {
            let window = &sequence[sequence.len() - 8..];
            let expected = argmax(&penalize(&logits, window, 1.3));
            assert_eq!(token, expected, "{}: step {step}", label(&ctx));
            sequence.push(expected);
        }
        assert!(
            drawn.iter().collect::<std::collections::HashSet<_>>().len() > 2,
            "the penalty makes greedy move on: {drawn:?}"
        );
    }
}

#[test]
fn top_k_top_p_and_min_p_keep_the_cpu_candidate_sets() {
    let mut rng = StdRng::seed_from_u64(4);
    let base = SamplingParams { temperature: 1.0, ..SamplingParams::default() };
    let cases = [
        SamplingParams { top_k: 40, ..base.clone() },
        SamplingParams { top_p: 0.9, ..base.clone() },
        SamplingParams { top_k: 1, ..base.clone() },
        SamplingParams { top_k: 1000, ..base.clone() },
        SamplingParams { top_p: 0.0, ..base.clone() },
        SamplingParams { top_k: 30, top_p: 0.8, ..base.clone() },
        SamplingParams { min_p: 0.05, ..base.clone() },
        SamplingParams { top_k: 50, top_p: 0.95, min_p: 0.02, temperature: 0.7, ..base.clone() },
        SamplingParams { top_p: 0.5, temperature: 2.5, ..base.clone() },
    ];
    for ctx in contexts() {
        for vocab in [5000usize, 100, 262_144] {
            let harness = Harness::new(&ctx, vocab, &[], 16);
            let logits = peaked_logits(&mut rng, vocab, 60);
            harness.set_logits(&logits);
            for params in &cases {
                harness.sample(params, &[], 1);
                let actual = harness.sampler.last_candidates(&ctx).unwrap();
                // Top-k of the whole vocabulary is off: a full-distribution draw keeps no list.
                let full_distribution =
                    params.top_k as usize >= vocab && params.top_p >= 1.0 && params.min_p <= 0.0;
                let expected =
                    if full_distribution { Vec::new() } else { candidates_reference(&logits, params) };
                let context = format!("{} vocab {vocab} {params:?}", label(&ctx));
                assert_eq!(
                    actual.iter().map(|c| c.0).collect::<Vec<_>>(),
                    expected.iter().map(|c| c.0).collect::<Vec<_>>(),
                    "{context}"
                );
                for ((_, p), (_, q)) in actual.iter().zip(&expected) {
                    assert!(
                        (*p as f64 - q).abs() <= PROBABILITY_TOLERANCE,
                        "{context}: probability {p} vs {q}"
                    );
                }
            }
        }
    }
}

/// The threshold is exact when each slice reports enough of its best logits; when the best
/// tokens crowd into a few slices, or tie, it is looser and more tokens are sorted, but the
/// candidates must be the same.
#[test]
fn candidate_sets_stay_exact_when_the_best_tokens_cluster_or_tie() {
    let mut rng = StdRng::seed_from_u64(11);
    let params = SamplingParams { temperature: 1.0, top_k: 200, ..SamplingParams::default() };
    let vocab = 40_000;
    let mut clustered = random_logits(&mut rng, vocab, 1.0);
    for logit in &mut clustered[20_000..20_700] {
        *logit += 3.0;
    }
    let mut tied = vec![0.5f32; vocab];
    tied[39_999] = 1.0;
    let mut negative_ties = vec![f32::NEG_INFINITY; vocab];
    negative_ties[12_345] = -1.0;
    for ctx in contexts() {
        let harness = Harness::new(&ctx, vocab, &[], 16);
        for (name, logits) in
            [("clustered", &clustered), ("tied", &tied), ("all but one -inf", &negative_ties)]
        {
            harness.set_logits(logits);
            harness.sample(&params, &[], 1);
            let actual: Vec<u32> =
                harness.sampler.last_candidates(&ctx).unwrap().iter().map(|c| c.0).collect();
            let expected: Vec<u32> = candidates_reference(logits, &params).iter().map(|c| c.0).collect();
            assert_eq!(actual, expected, "{} {name}", label(&ctx));
        }
    }
}

#[test]
fn temperature_only_draws_from_the_full_distribution() {
    let mut rng = StdRng::seed_from_u64(5);
    for ctx in contexts() {
        let vocab = 16;
        let harness = Harness::new(&ctx, vocab, &[], 2048);
        let logits = random_logits(&mut rng, vocab, 2.0);
        harness.set_logits(&logits);
        let params = SamplingParams { temperature: 0.7, seed: 42, ..SamplingParams::default() };
        let draws = harness.sample(&params, &[], 2000);
        assert!(harness.sampler.last_candidates(&ctx).unwrap().is_empty());
        let distribution = full_distribution(&logits, 0.7);
        assert_draws_match(label(&ctx), &draws, &distribution, 42);
        // 15 degrees of freedom: P(χ² > 37.70) = 0.001.
        let statistic = chi_square(&draws, &distribution);
        assert!(statistic < 37.70, "{}: chi-square {statistic}", label(&ctx));
    }
}

#[test]
fn full_distribution_draws_span_slices_exactly() {
    let mut rng = StdRng::seed_from_u64(6);
    for ctx in contexts() {
        // Five slices, with the probable tokens spread over all of them.
        let vocab = 5000;
        let harness = Harness::new(&ctx, vocab, &[], 256);
        let mut logits = random_logits(&mut rng, vocab, 1.0);
        for token in [3, 1023, 1024, 2500, 4096, 4999] {
            logits[token] = 8.0 + rng.random_range(0.0..1.0f32);
        }
        harness.set_logits(&logits);
        let params = SamplingParams { temperature: 1.3, seed: 7, ..SamplingParams::default() };
        let draws = harness.sample(&params, &[], 200);
        assert_draws_match(label(&ctx), &draws, &full_distribution(&logits, 1.3), 7);
        let background = draws.iter().filter(|&&t| logits[t as usize] < 2.0).count();
        assert!(background > 0, "{}: the low-probability background is drawn too", label(&ctx));
    }
}

#[test]
fn candidate_draws_follow_the_kept_probabilities() {
    let mut rng = StdRng::seed_from_u64(8);
    for ctx in contexts() {
        // Candidate mode sorts every step, which is slow on lavapipe: fewer draws than the
        // full-distribution test, still at least 40 expected per kept token.
        let vocab = 16;
        let harness = Harness::new(&ctx, vocab, &[], 1024);
        let logits = random_logits(&mut rng, vocab, 1.0);
        harness.set_logits(&logits);
        let params = SamplingParams { temperature: 1.5, top_k: 5, seed: 99, ..SamplingParams::default() };
        let draws = harness.sample(&params, &[], 400);
        let distribution = candidates_reference(&logits, &params);
        assert_eq!(distribution.len(), 5);
        assert!(distribution.iter().all(|&(_, p)| p * 400.0 >= 40.0), "{distribution:?}");
        assert_draws_match(label(&ctx), &draws, &distribution, 99);
        // 4 degrees of freedom: P(χ² > 18.47) = 0.001.
        let statistic = chi_square(&draws, &distribution);
        assert!(statistic < 18.47, "{}: chi-square {statistic}", label(&ctx));
    }
}

#[test]
fn a_seed_reproduces_its_sequence() {
    let mut rng = StdRng::seed_from_u64(9);
    for ctx in contexts() {
        let harness = Harness::new(&ctx, 2000, &[], 64);
        harness.set_logits(&random_logits(&mut rng, 2000, 1.0));
        for params in [
            SamplingParams { temperature: 1.0, seed: 1234, ..SamplingParams::default() },
            SamplingParams { temperature: 1.0, top_p: 0.9, seed: 1234, ..SamplingParams::default() },
        ] {
            let first = harness.sample(&params, &[], 20);
            assert_eq!(harness.sample(&params, &[], 20), first, "{}: same seed", label(&ctx));
            let other = harness.sample(&SamplingParams { seed: 1235, ..params.clone() }, &[], 20);
            assert_ne!(other, first, "{}: another seed", label(&ctx));
            // One submit per step draws the same as all steps in one submit.
            harness.set_step([0, 1, 0, 0]);
            harness.sampler.reset_history(&ctx.queue, &[]);
            for _ in 0..20 {
                harness.run(&params, 1);
            }
            assert_eq!(
                ctx.read_u32(harness.sampler.sampled_tokens_buffer(), 20).unwrap(),
                first,
                "{}: step by step",
                label(&ctx)
            );
        }
    }
}

#[test]
fn finish_step_feeds_the_token_and_advances_the_step() {
    for ctx in contexts() {
        let vocab = 700;
        let harness = Harness::new(&ctx, vocab, &[11, 650], 4);
        let mut logits = vec![0.0f32; vocab];
        logits[300] = 5.0;
        harness.set_logits(&logits);
        // A prefill step of 7 tokens at position 10, three tokens already generated.
        harness.set_step([10, 7, 3, 0]);
        harness.run(&SamplingParams::greedy(), 1);
        assert_eq!(harness.step(), [17, 1, 4, 0], "{}", label(&ctx));
        assert_eq!(harness.next_token(), 300);
        assert_eq!(ctx.read_u32(harness.sampler.sampled_tokens_buffer(), 4).unwrap()[3], 300);

        logits[650] = 9.0;
        harness.set_logits(&logits);
        harness.run(&SamplingParams::greedy(), 1);
        assert_eq!(harness.step(), [18, 1, 5, 1], "{}: a stop token sets stopped", label(&ctx));
        assert_eq!(harness.next_token(), 650);

        logits[650] = 0.0;
        harness.set_logits(&logits);
        harness.run(&SamplingParams::greedy(), 6);
        assert_eq!(harness.step(), [24, 1, 11, 1], "{}: stopped stays set", label(&ctx));
        // Steps 5..=10 wrote ring slots 1, 2, 3, 0, 1, 2.
        assert_eq!(
            ctx.read_u32(harness.sampler.sampled_tokens_buffer(), 4).unwrap(),
            [300, 300, 300, 300],
            "{}",
            label(&ctx)
        );
    }
}

#[test]
fn invalid_shapes_are_errors() {
    let ctx = gpu(GpuOptions::default());
    assert!(matches!(GpuSampler::new(&ctx, 0, &[], 16), Err(KernelError::InvalidShape { .. })));
    assert!(matches!(GpuSampler::new(&ctx, 100, &[], 0), Err(KernelError::InvalidShape { .. })));
    assert!(matches!(GpuSampler::new(&ctx, 100, &vec![1; 5000], 16), Err(KernelError::InvalidShape { .. })));
    let sampler = GpuSampler::new(&ctx, 100, &[], 16).unwrap();
    let f32_row = |width: u32| GpuTensor::zeroed(&ctx, "logits", 1, width, Element::F32);
    let tokens = GpuTensor::zeroed(&ctx, "tokens", 1, 1, Element::U32);
    let step = StepBuffer::new(&ctx);
    let mut ops = OpList::new();
    assert!(matches!(
        sampler.record(&ctx, &mut ops, &f32_row(99), &tokens, &step),
        Err(KernelError::InvalidShape { .. })
    ));
    let logits = f32_row(100);
    assert!(matches!(
        sampler.record(&ctx, &mut ops, &logits, &f32_row(1), &step),
        Err(KernelError::InvalidShape { .. })
    ));
    sampler.record(&ctx, &mut ops, &logits, &tokens, &step).unwrap();
    assert_eq!(
        ops.len(),
        5,
        "slices, threshold, candidates, select and finish: one slice needs no merge round"
    );
}

/// Outside candidate mode the candidate kernels are not encoded at all; the greedy and
/// candidate tests above show both paths still sample correctly.
#[test]
fn candidate_kernels_run_only_in_candidate_mode() {
    let ctx = gpu(GpuOptions::default());
    let vocab = 300_000;
    let sampler = GpuSampler::new(&ctx, vocab, &[], 16).unwrap();
    let logits = GpuTensor::zeroed(&ctx, "logits", 1, vocab, Element::F32);
    let (tokens, step) = (GpuTensor::zeroed(&ctx, "tokens", 1, 1, Element::U32), StepBuffer::new(&ctx));
    let mut ops = OpList::new();
    sampler.record(&ctx, &mut ops, &logits, &tokens, &step).unwrap();
    let encoded = |ops: &OpList| {
        ops.labels()
            .filter(|label| {
                *label != "sampling slices" && *label != "sampling select" && *label != "sampling finish"
            })
            .count()
    };
    for (params, candidate_kernels) in [
        (SamplingParams::greedy(), 0),
        (SamplingParams { temperature: 0.8, ..SamplingParams::default() }, 0),
        (SamplingParams { temperature: 0.8, top_k: 40, ..SamplingParams::default() }, ops.len() - 3),
        (SamplingParams { repetition_penalty: 1.3, ..SamplingParams::greedy() }, 0),
    ] {
        sampler.set_params(&ctx.queue, &params);
        assert_eq!(encoded(&ops), candidate_kernels, "{params:?}");
    }
    assert!(ops.len() > 6, "threshold, candidates and merge rounds at a 300k vocabulary");
}

/// Per-step times of each sampling path at Gemma's vocabulary size, with `steps` steps in one
/// submit as GPU-resident decode runs them. Not a check: run with `--ignored --nocapture`.
#[test]
#[ignore]
fn sampler_step_times() {
    let mut rng = StdRng::seed_from_u64(10);
    let sampling = SamplingParams { temperature: 0.8, ..SamplingParams::default() };
    let paths = [
        ("greedy", SamplingParams::greedy()),
        ("greedy + penalty", SamplingParams { repetition_penalty: 1.1, ..SamplingParams::default() }),
        ("temperature", sampling.clone()),
        (
            "top-k 40, top-p 0.95, min-p 0.05",
            SamplingParams { top_k: 40, top_p: 0.95, min_p: 0.05, ..sampling },
        ),
    ];
    for ctx in contexts() {
        for vocab in [16usize, 262_144] {
            let harness = Harness::new(&ctx, vocab, &[], 1024);
            harness.set_logits(&peaked_logits(&mut rng, vocab, 60));
            for (name, params) in &paths {
                let steps = 200;
                harness.sample(params, &[1, 2, 3], 1);
                let started = std::time::Instant::now();
                harness.sample(params, &[1, 2, 3], steps);
                let per_step = started.elapsed().as_secs_f64() * 1e3 / steps as f64;
                println!(
                    "{} ({}), vocab {vocab}, {name}: {per_step:.3} ms/step",
                    ctx.describe(),
                    label(&ctx)
                );
            }
        }
    }
}
