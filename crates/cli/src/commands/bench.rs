//! `doppler bench`: llama-bench's method. pp = one batch of N prompt tokens from an empty
//! cache; tg = N tokens decoded one at a time from an empty cache, greedy, timed end to end
//! (sampling and every CPU step included); a warm-up run is excluded; mean ± stddev. With
//! `--depth N` both run on top of N tokens already in the cache (llama-bench's `-d`).

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::Result;
use doppler_engine::{
    gpu::{KernelTiming, WeightTraffic},
    CancelToken, GenerateOptions, ProfileCadence, SamplingParams,
};
use serde::Serialize;

use super::model_loading::{load_with, ModelArgs};

#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
    #[arg(long, default_value_t = 512)]
    prompt_tokens: u32,
    #[arg(long, default_value_t = 128)]
    gen_tokens: u32,
    #[arg(long, default_value_t = 5)]
    runs: u32,
    /// Tokens in the KV cache before each pp and tg run (reported as e.g. tg128@d4096).
    #[arg(long, default_value_t = 0)]
    depth: u32,
    /// Decode steps per GPU submit (the GPU-resident decode loop reads tokens back once per
    /// submit); by default the engine sizes batches as it does for every generation.
    #[arg(long)]
    steps_per_submit: Option<usize>,
    /// Print the per-kernel GPU time table (timestamp queries).
    #[arg(long)]
    profile: bool,
    /// Time one decode step in N (and every prefill step) throughout the runs, as the app's
    /// live profiler does: its cost is the difference from a run without.
    #[arg(long, value_name = "N")]
    profile_every: Option<usize>,
    /// With --profile-every: time no decode step sooner than this after the last (the app
    /// waits 200 ms).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    profile_min_interval_ms: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Stat {
    mean: f64,
    stddev: f64,
    samples: Vec<f64>,
}

impl Stat {
    fn of(samples: Vec<f64>) -> Stat {
        let n = samples.len().max(1) as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let variance = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        Stat { mean, stddev: variance.sqrt(), samples }
    }
}

#[derive(Serialize)]
struct KernelRow {
    kernel: String,
    dispatches_per_token: usize,
    microseconds_per_token: f64,
    share: f64,
    /// Weight bytes the kernel's dispatches read (activations left out); `null` for kernels
    /// that read no weights.
    bytes_per_token: Option<u64>,
    /// Achieved weight bandwidth: `bytes_per_token` over the GPU time of those dispatches.
    gigabytes_per_second: Option<f64>,
}

#[derive(Serialize)]
struct BenchReport {
    model: String,
    architecture: String,
    quantization: String,
    adapter: String,
    prompt_tokens: u32,
    gen_tokens: u32,
    runs: u32,
    depth: u32,
    /// `null`: sized by the engine.
    steps_per_submit: Option<usize>,
    /// Opening, checking and uploading the model, and compiling its kernels.
    load_seconds: f64,
    /// The weights uploaded per second of `load_seconds`.
    load_gigabytes_per_second: f64,
    pp_tokens_per_second: Stat,
    tg_tokens_per_second: Stat,
    ttft_ms: Stat,
    /// CPU time recording and submitting decode steps, per generated token.
    recording_ms_per_token: Stat,
    ms_per_token_p50: f64,
    ms_per_token_p90: f64,
    /// Steps timed by `--profile-every` over all runs.
    profiled_steps: usize,
    submits_per_token: f64,
    readback_bytes_per_token: f64,
    gpu_memory_bytes: u64,
    kernels_per_token: Vec<KernelRow>,
    /// The same for one prefill step of the whole prompt (the columns are per step, not per token).
    kernels_per_prefill: Vec<KernelRow>,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

pub fn run(args: BenchArgs) -> Result<()> {
    let context = args.depth + args.prompt_tokens.max(args.gen_tokens + 1) + 16;
    let load_started = Instant::now();
    let model = load_with(&args.model, Some(context), Some(args.prompt_tokens.max(1)))?;
    let load_seconds = load_started.elapsed().as_secs_f64();
    let mut session = model.new_session()?;
    if let Some(steps) = args.steps_per_submit {
        session.set_steps_per_submit(steps);
    }
    let profiled_steps = Arc::new(AtomicUsize::new(0));
    if let Some(every) = args.profile_every {
        let count = profiled_steps.clone();
        let cadence =
            ProfileCadence { every, min_interval: Duration::from_millis(args.profile_min_interval_ms) };
        if !session.sample_profiles(
            cadence,
            Box::new(move |_| {
                count.fetch_add(1, Ordering::Relaxed);
            }),
        ) {
            anyhow::bail!("--profile-every: the adapter has no timestamp queries");
        }
    }
    let vocab = model.config().vocab_size;
    let bos = model.tokenizer().bos_id().unwrap_or(0);
    // A fixed, varied prompt: ids spread over the vocabulary.
    let prompt: Vec<u32> =
        std::iter::once(bos).chain((1..args.prompt_tokens).map(|i| (i * 7919 + 13) % vocab)).collect();
    // The cache's content at depth: other ids than the prompt's, so nothing is reused.
    let filler: Vec<u32> =
        std::iter::once(bos).chain((1..args.depth).map(|i| (i * 104_729 + 7) % vocab)).collect();
    // What the cache holds under every measurement: nothing at depth 0.
    let cached: &[u32] = if args.depth > 0 { &filler } else { &[] };
    let tg_prompt: Vec<u32> = cached.iter().copied().chain([bos]).collect();
    let greedy = SamplingParams::greedy();
    let options = GenerateOptions {
        sampling: greedy.clone(),
        max_tokens: args.gen_tokens,
        stop: Vec::new(),
        ignore_eos: true,
    };

    let mut pp = Vec::new();
    let mut tg = Vec::new();
    let mut ttft = Vec::new();
    let mut recording = Vec::new();
    let mut submits_per_token = Vec::new();
    let mut intervals = Vec::new();
    for run in 0..=args.runs {
        let mut prompt_started = Instant::now();
        prefill_on_top(&mut session, cached, &prompt, |_| prompt_started = Instant::now())?;
        let pp_seconds = prompt_started.elapsed().as_secs_f64();

        fill_cache(&mut session, cached)?;
        let started = Instant::now();
        let mut last = started;
        let mut first_token_ms = None;
        let mut token_intervals = Vec::new();
        let summary = session.generate(&tg_prompt, &options, &CancelToken::new(), &mut |_| {
            let now = Instant::now();
            first_token_ms.get_or_insert((now - started).as_secs_f64() * 1e3);
            token_intervals.push((now - last).as_secs_f64() * 1e3);
            last = now;
        })?;
        let tg_seconds = started.elapsed().as_secs_f64();
        if run == 0 {
            continue; // warm-up
        }
        pp.push(f64::from(args.prompt_tokens) / pp_seconds);
        tg.push(summary.generated_tokens as f64 / tg_seconds);
        ttft.push(first_token_ms.unwrap_or(0.0));
        recording.push(summary.decode_recording_ms / summary.generated_tokens.max(1) as f64);
        submits_per_token.push(summary.decode_submits as f64 / summary.generated_tokens.max(1) as f64);
        intervals.extend(token_intervals);
    }
    intervals.sort_by(|a, b| a.total_cmp(b));

    session.stop_sampling_profiles();
    // Profiled at the same depth as the runs.
    let kernels_per_token =
        if args.profile { profile(&mut session, cached, &tg_prompt)? } else { Vec::new() };
    let kernels_per_prefill =
        if args.profile { profile_prefill(&mut session, cached, &prompt)? } else { Vec::new() };
    let report = BenchReport {
        model: model.info().name.clone(),
        architecture: model.info().architecture.clone(),
        quantization: model.info().quantization.clone(),
        adapter: model.gpu().describe(),
        prompt_tokens: args.prompt_tokens,
        gen_tokens: args.gen_tokens,
        runs: args.runs,
        depth: args.depth,
        steps_per_submit: args.steps_per_submit,
        pp_tokens_per_second: Stat::of(pp),
        tg_tokens_per_second: Stat::of(tg),
        ttft_ms: Stat::of(ttft),
        load_seconds,
        load_gigabytes_per_second: model.info().weight_bytes as f64 / load_seconds / 1e9,
        recording_ms_per_token: Stat::of(recording),
        ms_per_token_p50: percentile(&intervals, 0.5),
        ms_per_token_p90: percentile(&intervals, 0.9),
        profiled_steps: profiled_steps.load(Ordering::Relaxed),
        submits_per_token: Stat::of(submits_per_token).mean,
        readback_bytes_per_token: 4.0,
        gpu_memory_bytes: model.info().weight_bytes + session.gpu_bytes(),
        kernels_per_token,
        kernels_per_prefill,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{} ({} {}) on {}", report.model, report.architecture, report.quantization, report.adapter);
        let at_depth = if args.depth > 0 { format!("@d{}", args.depth) } else { String::new() };
        println!(
            "pp{}{at_depth}: {:.1} ± {:.1} tok/s",
            args.prompt_tokens, report.pp_tokens_per_second.mean, report.pp_tokens_per_second.stddev
        );
        println!(
            "tg{}{at_depth}: {:.1} ± {:.1} tok/s",
            args.gen_tokens, report.tg_tokens_per_second.mean, report.tg_tokens_per_second.stddev
        );
        println!(
            "load {:.2} s ({:.2} GB/s of weights)",
            report.load_seconds, report.load_gigabytes_per_second
        );
        println!(
            "ttft {:.2} ms, ms/token p50 {:.3} p90 {:.3}, CPU recording {:.3} ms/token, GPU memory {} MiB",
            report.ttft_ms.mean,
            report.ms_per_token_p50,
            report.ms_per_token_p90,
            report.recording_ms_per_token.mean,
            report.gpu_memory_bytes >> 20
        );
        for (rows, per) in
            [(&report.kernels_per_token, "µs/token"), (&report.kernels_per_prefill, "µs/prefill")]
        {
            if rows.is_empty() {
                continue;
            }
            println!("{:<28} {:>6} {:>12} {:>7} {:>9}", "kernel", "calls", per, "share", "GB/s");
            for row in rows {
                let bandwidth = row.gigabytes_per_second.map_or("-".to_string(), |gbs| format!("{gbs:.2}"));
                println!(
                    "{:<28} {:>6} {:>12.2} {:>6.1}% {:>9}",
                    row.kernel,
                    row.dispatches_per_token,
                    row.microseconds_per_token,
                    row.share * 100.0,
                    bandwidth
                );
            }
        }
    }
    Ok(())
}

/// Leaves exactly `cached` in the session's cache (prefilled unmeasured), so what runs next
/// runs at the bench's depth.
fn fill_cache(session: &mut doppler_engine::Session, cached: &[u32]) -> Result<()> {
    session.reset();
    if !cached.is_empty() {
        session.prefill_from_empty(cached, &SamplingParams::greedy())?;
    }
    Ok(())
}

/// Prefills `prompt` on top of `cached` (see `fill_cache`), calling `before_prompt` just
/// before the prompt's prefill, so that only it is timed or profiled.
fn prefill_on_top(
    session: &mut doppler_engine::Session,
    cached: &[u32],
    prompt: &[u32],
    before_prompt: impl FnOnce(&mut doppler_engine::Session),
) -> Result<()> {
    let greedy = SamplingParams::greedy();
    if cached.is_empty() {
        before_prompt(session);
        session.prefill_from_empty(prompt, &greedy)?;
    } else {
        session.prefill_from_empty(cached, &greedy)?;
        before_prompt(session);
        session.prefill_after_cached(prompt, &greedy)?;
    }
    Ok(())
}

/// GPU time per kernel kind of one profiled decode step: a few tokens into `prompt`, whose
/// first tokens are `cached` (prefilled unprofiled).
fn profile(session: &mut doppler_engine::Session, cached: &[u32], prompt: &[u32]) -> Result<Vec<KernelRow>> {
    session.set_steps_per_submit(1);
    fill_cache(session, cached)?;
    session.set_profiling(true);
    let options = GenerateOptions {
        sampling: SamplingParams::greedy(),
        max_tokens: 8,
        stop: Vec::new(),
        ignore_eos: true,
    };
    session.generate(prompt, &options, &CancelToken::new(), &mut |_| {})?;
    let timings = session.last_step_timings().to_vec();
    session.set_profiling(false);
    Ok(kernel_table(&timings))
}

/// GPU time per kernel kind of the profiled prefill of `prompt` on top of `cached` (one step
/// per batch; the table is of the last batch).
fn profile_prefill(
    session: &mut doppler_engine::Session,
    cached: &[u32],
    prompt: &[u32],
) -> Result<Vec<KernelRow>> {
    prefill_on_top(session, cached, prompt, |session| session.set_profiling(true))?;
    let timings = session.last_step_timings().to_vec();
    session.set_profiling(false);
    Ok(kernel_table(&timings))
}

/// Timings summed per kernel kind, largest first.
fn kernel_table(timings: &[KernelTiming]) -> Vec<KernelRow> {
    let mut totals: Vec<(String, usize, f64, WeightTraffic)> = Vec::new();
    for timing in timings {
        let kind = timing.op().to_string();
        let index = match totals.iter().position(|(k, ..)| *k == kind) {
            Some(index) => index,
            None => {
                totals.push((kind, 0, 0.0, WeightTraffic::default()));
                totals.len() - 1
            }
        };
        let entry = &mut totals[index];
        entry.1 += 1;
        entry.2 += timing.nanoseconds;
        entry.3.add(timing);
    }
    let sum: f64 = totals.iter().map(|t| t.2).sum::<f64>().max(1.0);
    let mut rows: Vec<KernelRow> = totals
        .into_iter()
        .map(|(kernel, calls, ns, traffic)| KernelRow {
            kernel,
            dispatches_per_token: calls,
            microseconds_per_token: ns / 1e3,
            share: ns / sum,
            bytes_per_token: (traffic.bytes > 0).then_some(traffic.bytes),
            gigabytes_per_second: traffic.gigabytes_per_second(),
        })
        .collect();
    rows.sort_by(|a, b| b.microseconds_per_token.total_cmp(&a.microseconds_per_token));
    rows
}
