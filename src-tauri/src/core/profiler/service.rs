use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, MutexGuard,
    },
    time::{Duration, Instant},
};

use doppler_engine::{
    gpu::{KernelTiming, KernelVariant, WeightTraffic},
    ProfileCadence, ProfiledStep, StepPhase,
};
use doppler_runtime::ProfileSampling;
use serde_json::{json, Value};

use super::models::{
    KernelKind, KernelRow, KernelTable, KindRow, LayerRow, ProfileSummary, ProfilerEvent, RecordedStep,
    ReplyTiming, StepSample,
};
use crate::core::engine::{GenerationObserver, GenerationOutcome};

/// A reply's first prefill step and one decode step in 32 are timed, none within 200 ms of the
/// last: on the H100 a timed step (a batch of its own, read back apart) costs about 2 ms more
/// than an untimed one, so a fast model pays about 1% and a slow one (over 6 ms a step) 1% or
/// less at one step in 32 (bench/profile_cost.sh measures it).
const SAMPLE_CADENCE: ProfileCadence = ProfileCadence { every: 32, min_interval: Duration::from_millis(200) };

/// Sampled steps and events kept for the view and for export: the last few minutes of replies.
const MAX_STEPS: usize = 512;
const MAX_EVENTS: usize = 4096;

/// Token arrivals are reported at most this often: a decode batch hands over several tokens at
/// once, so speeds are measured over windows rather than from one token to the next.
const TOKEN_WINDOW: Duration = Duration::from_millis(250);

/// Where the profiler's events go: the open view's channel.
pub trait ProfilerEventSink: Send + Sync {
    fn send(&self, event: &ProfilerEvent);
}

/// Collects the sampled kernel profiles and token timings of the app's replies, keeps the
/// recent ones, aggregates them and streams events to the view.
pub struct ProfilerService {
    epoch: Instant,
    next_reply: AtomicU64,
    log: Mutex<ProfileLog>,
    sink: Mutex<Option<Arc<dyn ProfilerEventSink>>>,
}

#[derive(Default)]
struct ProfileLog {
    /// The model the kept steps ran on: a reply on another model starts the log afresh.
    model_id: Option<String>,
    steps: VecDeque<RecordedStep>,
    events: VecDeque<ProfilerEvent>,
}

impl Default for ProfilerService {
    fn default() -> Self {
        ProfilerService {
            epoch: Instant::now(),
            next_reply: AtomicU64::new(1),
            log: Mutex::default(),
            sink: Mutex::default(),
        }
    }
}

impl ProfilerService {
    /// From now on events go to `sink` (the view that opened last); returns the kept events
    /// before them, oldest first, so a view that opens mid-reply misses none and sees none twice.
    pub fn watch(&self, sink: Arc<dyn ProfilerEventSink>) -> Vec<ProfilerEvent> {
        let log = self.lock();
        *self.sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(sink);
        log.events.iter().cloned().collect()
    }

    pub fn summary(&self) -> ProfileSummary {
        summarize(self.lock().steps.iter())
    }

    pub fn events(&self) -> Vec<ProfilerEvent> {
        self.lock().events.iter().cloned().collect()
    }

    pub fn recorded_steps(&self) -> Vec<RecordedStep> {
        self.lock().steps.iter().cloned().collect()
    }

    /// Follows a reply on `model_id` for the profiler, `inner` hearing everything as before.
    pub fn observe(
        self: &Arc<Self>,
        model_id: String,
        inner: Box<dyn GenerationObserver>,
    ) -> Box<dyn GenerationObserver> {
        let reply_id = self.next_reply.fetch_add(1, Ordering::Relaxed);
        Box::new(ProfiledObserver {
            profiler: self.clone(),
            inner,
            reply_id,
            model_id,
            started: None,
            first_token: false,
            window: TokenWindow::default(),
        })
    }

    fn now_ms(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1e3
    }

    fn reply_started(&self, reply_id: u64, model_id: &str) {
        let mut log = self.lock();
        if log.model_id.as_deref() != Some(model_id) {
            *log = ProfileLog { model_id: Some(model_id.to_string()), ..ProfileLog::default() };
        }
        let event =
            ProfilerEvent::ReplyStarted { reply_id, model_id: model_id.to_string(), at_ms: self.now_ms() };
        self.emit(log, event);
    }

    fn record_step(&self, reply_id: u64, step: ProfiledStep) {
        let at_ms = self.now_ms();
        let sample = StepSample {
            reply_id,
            phase: step.phase,
            position: step.position,
            tokens: step.tokens,
            at_ms,
            gpu_ms: step.kernels.iter().map(|k| k.nanoseconds).sum::<f64>() / 1e6,
            kinds: aggregate([&step]).kinds,
        };
        let mut log = self.lock();
        if log.steps.len() == MAX_STEPS {
            log.steps.pop_front();
        }
        log.steps.push_back(RecordedStep { reply_id, at_ms, step });
        let summary = summarize(log.steps.iter());
        self.emit(log, ProfilerEvent::Step { step: sample, summary });
    }

    fn record(&self, event: ProfilerEvent) {
        self.emit(self.lock(), event);
    }

    /// Keeps `event` and sends it, in the order the log took them.
    fn emit(&self, mut log: MutexGuard<'_, ProfileLog>, event: ProfilerEvent) {
        if log.events.len() == MAX_EVENTS {
            log.events.pop_front();
        }
        log.events.push_back(event.clone());
        let sink = self.sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        if let Some(sink) = sink {
            sink.send(&event);
        }
    }

    fn lock(&self) -> MutexGuard<'_, ProfileLog> {
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Tokens since the last report.
#[derive(Default)]
struct TokenWindow {
    opened: Option<Instant>,
    count: usize,
}

/// Wraps a reply's observer: times its tokens and asks the engine for sampled kernel profiles.
struct ProfiledObserver {
    profiler: Arc<ProfilerService>,
    inner: Box<dyn GenerationObserver>,
    reply_id: u64,
    model_id: String,
    started: Option<Instant>,
    first_token: bool,
    window: TokenWindow,
}

impl ProfiledObserver {
    fn report_tokens(&mut self) {
        let Some(opened) = self.window.opened else { return };
        if self.window.count == 0 {
            return;
        }
        self.profiler.record(ProfilerEvent::Tokens {
            reply_id: self.reply_id,
            at_ms: self.profiler.now_ms(),
            count: self.window.count,
            span_ms: opened.elapsed().as_secs_f64() * 1e3,
        });
        self.window = TokenWindow { opened: Some(Instant::now()), count: 0 };
    }
}

impl GenerationObserver for ProfiledObserver {
    fn queued(&mut self, ahead: usize) {
        self.inner.queued(ahead);
    }

    fn started(&mut self) {
        self.started = Some(Instant::now());
        self.profiler.reply_started(self.reply_id, &self.model_id);
        self.inner.started();
    }

    fn token(&mut self, text: &str) {
        if !self.first_token {
            // Decode speed counts from the first token on: before it is the prefill.
            self.first_token = true;
            let ttft_ms = self.started.map_or(0.0, |started| started.elapsed().as_secs_f64() * 1e3);
            self.profiler.record(ProfilerEvent::FirstToken {
                reply_id: self.reply_id,
                at_ms: self.profiler.now_ms(),
                ttft_ms,
            });
            self.window = TokenWindow { opened: Some(Instant::now()), count: 0 };
        } else {
            self.window.count += 1;
            if self.window.opened.is_some_and(|opened| opened.elapsed() >= TOKEN_WINDOW) {
                self.report_tokens();
            }
        }
        self.inner.token(text);
    }

    fn finished(mut self: Box<Self>, outcome: GenerationOutcome) {
        self.report_tokens();
        if let GenerationOutcome::Finished(summary) = &outcome {
            let per_second = |tokens: usize, ms: f64| if ms > 0.0 { tokens as f64 * 1e3 / ms } else { 0.0 };
            self.profiler.record(ProfilerEvent::ReplyFinished {
                reply_id: self.reply_id,
                at_ms: self.profiler.now_ms(),
                timing: ReplyTiming {
                    prompt_tokens: summary.prompt_tokens,
                    prefilled_tokens: summary.prefilled_tokens,
                    generated_tokens: summary.generated_tokens,
                    ttft_ms: summary.time_to_first_token_ms,
                    prefill_tokens_per_second: per_second(summary.prefilled_tokens, summary.prefill_ms),
                    decode_tokens_per_second: summary.tokens_per_second,
                },
            });
        }
        let ProfiledObserver { inner, .. } = *self;
        inner.finished(outcome);
    }

    fn profile_sampling(&mut self) -> Option<ProfileSampling> {
        let profiler = self.profiler.clone();
        let reply_id = self.reply_id;
        Some(ProfileSampling {
            cadence: SAMPLE_CADENCE,
            sink: Box::new(move |step| profiler.record_step(reply_id, step)),
        })
    }
}

/// The kind of kernel an operation runs, from its label's op as the forward pass names it
/// ("attn_q+attn_k+attn_v", "ffn_norm+ffn_gate+ffn_up+ffn_silu", "attention", "lm head", …).
fn kernel_kind(op: &str) -> KernelKind {
    const MATRICES: [&str; 9] = [
        "attn_q",
        "attn_k",
        "attn_v",
        "attn_qkv",
        "attn_output",
        "ffn_gate",
        "ffn_up",
        "ffn_down",
        "lm head",
    ];
    let parts = || op.split('+');
    if op.contains("attention") || op.contains("rope") {
        KernelKind::Attention
    } else if parts().any(|part| MATRICES.contains(&part)) {
        KernelKind::Matmul
    } else if op.ends_with("norm") {
        KernelKind::Norm
    } else if op == "embedding" {
        KernelKind::Embedding
    } else {
        KernelKind::Elementwise
    }
}

fn summarize<'a>(steps: impl Iterator<Item = &'a RecordedStep> + Clone) -> ProfileSummary {
    let of_phase = |phase: StepPhase| {
        steps.clone().map(|recorded| &recorded.step).filter(move |step| step.phase == phase)
    };
    ProfileSummary {
        decode: aggregate(of_phase(StepPhase::Decode)),
        prefill: aggregate(of_phase(StepPhase::Prefill)),
    }
}

/// One kernel's dispatches over the sampled steps.
#[derive(Default)]
struct KernelSums {
    calls: usize,
    nanoseconds: f64,
    traffic: WeightTraffic,
    variants: Vec<Arc<KernelVariant>>,
}

/// Sums sampled steps by kernel, by kind and by layer; times per token are over the tokens
/// the steps ran.
fn aggregate<'a>(steps: impl IntoIterator<Item = &'a ProfiledStep>) -> KernelTable {
    let mut by_kernel: HashMap<&str, KernelSums> = HashMap::new();
    let mut by_kind: BTreeMap<KernelKind, f64> = BTreeMap::new();
    let mut by_layer: BTreeMap<Option<u32>, f64> = BTreeMap::new();
    let (mut count, mut tokens, mut total_ns) = (0, 0, 0.0);
    for step in steps {
        count += 1;
        tokens += step.tokens as usize;
        for timing in &step.kernels {
            let sums = by_kernel.entry(timing.op()).or_default();
            sums.calls += 1;
            sums.nanoseconds += timing.nanoseconds;
            sums.traffic.add(timing);
            if !sums.variants.contains(&timing.variant) {
                sums.variants.push(timing.variant.clone());
            }
            *by_kind.entry(kernel_kind(timing.op())).or_default() += timing.nanoseconds;
            *by_layer.entry(timing.layer()).or_default() += timing.nanoseconds;
            total_ns += timing.nanoseconds;
        }
    }
    let per_token = |ns: f64| ns / 1e6 / tokens.max(1) as f64;
    let share = |ns: f64| if total_ns > 0.0 { ns / total_ns } else { 0.0 };
    let mut kernels: Vec<KernelRow> = by_kernel
        .into_iter()
        .map(|(name, sums)| KernelRow {
            name: name.to_string(),
            kind: kernel_kind(name),
            calls: sums.calls,
            total_ms: sums.nanoseconds / 1e6,
            ms_per_token: per_token(sums.nanoseconds),
            share: share(sums.nanoseconds),
            gigabytes_per_second: sums.traffic.gigabytes_per_second(),
            variants: sums.variants.iter().map(|variant| variant.as_ref().clone()).collect(),
        })
        .collect();
    kernels.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then_with(|| a.name.cmp(&b.name)));
    KernelTable {
        steps: count,
        tokens,
        gpu_ms_per_token: per_token(total_ns),
        kernels,
        kinds: by_kind
            .into_iter()
            .map(|(kind, ns)| KindRow { kind, ms_per_token: per_token(ns), share: share(ns) })
            .collect(),
        layers: by_layer
            .into_iter()
            .map(|(layer, ns)| LayerRow { layer, ms_per_token: per_token(ns), share: share(ns) })
            .collect(),
    }
}

/// The sampled steps in the Trace Event Format that Perfetto and chrome://tracing open: one
/// complete (`"X"`) event per kernel, in µs, its arguments the kernel variant, the weight bytes
/// read and the GB/s achieved (`null` for kernels that read no weights). Timestamp queries give
/// each kernel's duration, not where it sits on the GPU's clock, so a step's kernels are laid
/// end to end from the moment its timings were read.
pub fn chrome_trace(steps: &[RecordedStep]) -> Value {
    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "GPU"}}),
        json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "decode"}}),
        json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "prefill"}}),
    ];
    for recorded in steps {
        let step = &recorded.step;
        let tid = match step.phase {
            StepPhase::Decode => 1,
            StepPhase::Prefill => 2,
        };
        let step_us: f64 = step.kernels.iter().map(|k| k.nanoseconds).sum::<f64>() / 1e3;
        let mut ts = recorded.at_ms * 1e3 - step_us;
        for timing in &step.kernels {
            events.push(kernel_event(timing, ts, tid, recorded));
            ts += timing.nanoseconds / 1e3;
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

fn kernel_event(timing: &KernelTiming, ts: f64, tid: u32, recorded: &RecordedStep) -> Value {
    json!({
        "name": timing.label,
        "cat": kernel_kind(timing.op()),
        "ph": "X",
        "ts": ts,
        "dur": timing.nanoseconds / 1e3,
        "pid": 1,
        "tid": tid,
        "args": {
            "reply": recorded.reply_id,
            "position": recorded.step.position,
            "tokens": recorded.step.tokens,
            "variant": timing.variant.to_string(),
            "weight_bytes": timing.weight_bytes,
            "gigabytes_per_second": timing.gigabytes_per_second(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weight bytes the test steps' products read: 1 MB a matrix, 10 MB the output head.
    fn weight_bytes(label: &str) -> Option<u64> {
        if label == "lm head" {
            Some(10_000_000)
        } else {
            label.contains("attn_q").then_some(1_000_000)
        }
    }

    /// The products read Q4_K weights but layer 1's attention projections Q6_K (a quant mix).
    fn variant(label: &str) -> KernelVariant {
        let (shader, weight_type) = match weight_bytes(label) {
            Some(_) if label.starts_with("blk.1.") => ("matmul_vector.wgsl", Some("TYPE_Q6_K")),
            Some(_) => ("matmul_vector.wgsl", Some("TYPE_Q4_K")),
            None => ("attention.wgsl", None),
        };
        KernelVariant {
            shader: shader.to_string(),
            entry: "main".to_string(),
            defines: weight_type.into_iter().chain(["WG=64u"]).map(str::to_string).collect(),
            workgroup_size: [64, 1, 1],
        }
    }

    fn step(phase: StepPhase, tokens: u32, kernels: &[(&str, f64)]) -> ProfiledStep {
        let kernels = kernels
            .iter()
            .map(|(label, us)| KernelTiming {
                label: label.to_string(),
                nanoseconds: us * 1e3,
                weight_bytes: weight_bytes(label),
                variant: Arc::new(variant(label)),
            })
            .collect();
        ProfiledStep { phase, position: 7, tokens, kernels }
    }

    fn decode_step() -> ProfiledStep {
        step(
            StepPhase::Decode,
            1,
            &[
                ("embedding", 10.0),
                ("blk.0.attn_norm+attn_q+attn_k+attn_v", 300.0),
                ("blk.0.qk_norm_rope_store", 20.0),
                ("blk.0.attention", 100.0),
                ("blk.1.attn_norm+attn_q+attn_k+attn_v", 500.0),
                ("blk.1.attention", 60.0),
                ("blk.1.ffn_norm", 10.0),
                ("lm head", 1000.0),
            ],
        )
    }

    #[test]
    fn kinds_come_from_the_op() {
        for (op, kind) in [
            ("attn_q+attn_k+attn_v", KernelKind::Matmul),
            ("ffn_norm+ffn_gate+ffn_up+ffn_silu", KernelKind::Matmul),
            ("attn_output", KernelKind::Matmul),
            ("lm head", KernelKind::Matmul),
            ("attention", KernelKind::Attention),
            ("qk_norm_rope_store", KernelKind::Attention),
            ("attn_norm", KernelKind::Norm),
            ("ffn_norm", KernelKind::Norm),
            ("embedding", KernelKind::Embedding),
            ("last token", KernelKind::Elementwise),
            ("ffn_gelu", KernelKind::Elementwise),
            ("ffn_down (K splits)", KernelKind::Elementwise),
        ] {
            assert_eq!(kernel_kind(op), kind, "{op}");
        }
    }

    #[test]
    fn steps_sum_by_kernel_kind_and_layer_per_token() {
        let steps = [decode_step(), decode_step()];
        let table = aggregate(&steps);
        assert_eq!((table.steps, table.tokens), (2, 2));
        assert!((table.gpu_ms_per_token - 2.0).abs() < 1e-9);

        let names: Vec<&str> = table.kernels.iter().map(|row| row.name.as_str()).collect();
        assert_eq!(names[..3], ["lm head", "attn_norm+attn_q+attn_k+attn_v", "attention"]);
        let qkv = &table.kernels[1];
        assert_eq!((qkv.kind, qkv.calls), (KernelKind::Matmul, 4));
        assert!((qkv.total_ms - 1.6).abs() < 1e-9 && (qkv.ms_per_token - 0.8).abs() < 1e-9);
        assert!((qkv.share - 0.4).abs() < 1e-9);
        // 4 MB over 1.6 ms of its four dispatches; 20 MB over the head's 2 ms.
        assert!((qkv.gigabytes_per_second.unwrap() - 2.5).abs() < 1e-9);
        assert!((table.kernels[0].gigabytes_per_second.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(table.kernels[2].gigabytes_per_second, None);
        // Each kernel lists the variants its layers ran, in the order first seen.
        let variants =
            |row: &KernelRow| row.variants.iter().map(|v| v.defines[0].clone()).collect::<Vec<_>>();
        assert_eq!(variants(qkv), ["TYPE_Q4_K", "TYPE_Q6_K"]);
        assert_eq!(table.kernels[2].variants, [variant("blk.0.attention")]);

        let kind = |kind| table.kinds.iter().find(|row| row.kind == kind).unwrap().ms_per_token;
        assert!((kind(KernelKind::Matmul) - 1.8).abs() < 1e-9);
        assert!((kind(KernelKind::Attention) - 0.18).abs() < 1e-9);
        assert!((kind(KernelKind::Norm) - 0.01).abs() < 1e-9);

        let layers: Vec<(Option<u32>, f64)> =
            table.layers.iter().map(|row| (row.layer, (row.ms_per_token * 1e3).round())).collect();
        assert_eq!(layers, [(None, 1010.0), (Some(0), 420.0), (Some(1), 570.0)]);
        let shares: f64 = table.kernels.iter().map(|row| row.share).sum();
        assert!((shares - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_prefill_step_counts_its_tokens() {
        let table = aggregate(&[step(StepPhase::Prefill, 4, &[("blk.0.attention", 800.0)])]);
        assert!((table.gpu_ms_per_token - 0.2).abs() < 1e-9);
    }

    #[test]
    fn no_steps_make_an_empty_table() {
        let table = aggregate(&[]);
        assert_eq!(table, KernelTable::default());
    }

    #[test]
    fn the_chrome_trace_has_one_complete_event_per_kernel_in_microseconds() {
        let recorded = [
            RecordedStep { reply_id: 3, at_ms: 100.0, step: decode_step() },
            RecordedStep {
                reply_id: 3,
                at_ms: 50.0,
                step: step(StepPhase::Prefill, 5, &[("blk.0.attention", 40.0)]),
            },
        ];
        let trace = chrome_trace(&recorded);
        let events = trace["traceEvents"].as_array().unwrap();
        let kernels: Vec<&Value> = events.iter().filter(|event| event["ph"] == "X").collect();
        assert_eq!(kernels.len(), 9);
        let output = kernels.iter().find(|event| event["name"] == "lm head").unwrap();
        assert_eq!((output["dur"].as_f64(), output["cat"].as_str()), (Some(1000.0), Some("matmul")));
        assert_eq!((output["pid"].as_u64(), output["tid"].as_u64()), (Some(1), Some(1)));
        // Each kernel's arguments: its variant, the weight bytes it read and the GB/s it achieved.
        let args = &output["args"];
        assert_eq!(args["variant"], "matmul_vector.wgsl:main [TYPE_Q4_K, WG=64u] 64×1×1");
        assert_eq!(
            (args["weight_bytes"].as_u64(), args["gigabytes_per_second"].as_f64()),
            (Some(10_000_000), Some(10.0))
        );
        assert_eq!(
            (args["reply"].as_u64(), args["position"].as_u64(), args["tokens"].as_u64()),
            (Some(3), Some(7), Some(1))
        );
        let attention = kernels.iter().find(|event| event["name"] == "blk.0.attention").unwrap();
        assert_eq!(attention["args"]["variant"], "attention.wgsl:main [WG=64u] 64×1×1");
        assert!(
            attention["args"]["weight_bytes"].is_null()
                && attention["args"]["gigabytes_per_second"].is_null()
        );
        // A step's kernels lie end to end and end when the step was read back.
        let first = kernels[0]["ts"].as_f64().unwrap();
        assert!((first - (100_000.0 - 2000.0)).abs() < 1e-6);
        assert!(kernels[..8].windows(2).all(|pair| {
            let end = pair[0]["ts"].as_f64().unwrap() + pair[0]["dur"].as_f64().unwrap();
            (end - pair[1]["ts"].as_f64().unwrap()).abs() < 1e-6
        }));
        assert_eq!(kernels[8]["tid"], 2);
        assert_eq!(events.iter().filter(|event| event["ph"] == "M").count(), 3);
        // What Perfetto loads: a JSON object with the events under `traceEvents`.
        let text = serde_json::to_string(&trace).unwrap();
        assert!(serde_json::from_str::<Value>(&text).unwrap()["traceEvents"].is_array());
    }

    struct Recorder(Mutex<Vec<ProfilerEvent>>);

    impl ProfilerEventSink for Recorder {
        fn send(&self, event: &ProfilerEvent) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    #[test]
    fn steps_stream_with_the_running_summary_and_replay_as_events() {
        let service = ProfilerService::default();
        service.reply_started(1, "smol");
        let recorder = Arc::new(Recorder(Mutex::default()));
        let backlog = service.watch(recorder.clone());
        assert!(matches!(backlog[..], [ProfilerEvent::ReplyStarted { reply_id: 1, .. }]));
        service.record_step(1, step(StepPhase::Prefill, 6, &[("blk.0.attention", 600.0)]));
        service.record_step(1, decode_step());
        service.record_step(1, decode_step());

        let sent = recorder.0.lock().unwrap().clone();
        assert_eq!(sent.len(), 3);
        let ProfilerEvent::Step { step, summary } = &sent[2] else { panic!("{:?}", sent[2]) };
        assert_eq!((step.phase, step.reply_id), (StepPhase::Decode, 1));
        assert!((step.gpu_ms - 2.0).abs() < 1e-9);
        assert_eq!((summary.decode.steps, summary.prefill.steps, summary.prefill.tokens), (2, 1, 6));
        assert_eq!(service.summary(), *summary);

        // Another model's kernels are another table.
        service.reply_started(2, "gemma");
        assert_eq!(service.summary(), ProfileSummary::default());
        assert_eq!(service.watch(recorder).len(), 1);
    }

    #[test]
    fn the_log_keeps_the_latest_steps() {
        let service = ProfilerService::default();
        service.reply_started(1, "smol");
        for _ in 0..MAX_STEPS + 3 {
            service.record_step(1, decode_step());
        }
        assert_eq!(service.recorded_steps().len(), MAX_STEPS);
        assert_eq!(service.summary().decode.steps, MAX_STEPS);
    }
}
