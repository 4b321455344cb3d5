//! Counters for `GET /metrics`, in Prometheus' text format.

use std::{
    collections::BTreeMap,
    fmt::Write,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
    time::Duration,
};

use doppler_engine::GenerationSummary;
use doppler_runtime::QueueView;

/// Upper bounds of the generation latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 11] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

#[derive(Default)]
pub struct Metrics {
    /// By route (the matched pattern, so clients cannot grow it) and status.
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    prompt_tokens: AtomicU64,
    generated_tokens: AtomicU64,
    latency: Mutex<Histogram>,
}

#[derive(Default)]
struct Histogram {
    /// Per bucket of LATENCY_BUCKETS, not cumulative.
    counts: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Metrics {
    pub fn request_answered(&self, route: &str, status: u16) {
        *lock(&self.requests).entry((route.to_string(), status)).or_default() += 1;
    }

    /// A generation ended; `latency` runs from its queueing to its end.
    pub fn generation_finished(&self, summary: &GenerationSummary, latency: Duration) {
        self.prompt_tokens.fetch_add(summary.prompt_tokens as u64, Ordering::Relaxed);
        self.generated_tokens.fetch_add(summary.generated_tokens as u64, Ordering::Relaxed);
        let seconds = latency.as_secs_f64();
        let mut histogram = lock(&self.latency);
        if let Some(bucket) = LATENCY_BUCKETS.iter().position(|&bound| seconds <= bound) {
            histogram.counts[bucket] += 1;
        }
        histogram.count += 1;
        histogram.sum += seconds;
    }

    pub fn render<K>(&self, queue: &QueueView<K>) -> String {
        let mut out = String::new();
        out.push_str("# HELP doppler_http_requests_total HTTP requests answered, by route and status.\n");
        out.push_str("# TYPE doppler_http_requests_total counter\n");
        for ((route, status), count) in lock(&self.requests).iter() {
            let _ =
                writeln!(out, "doppler_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {count}");
        }
        let counters = [
            ("doppler_prompt_tokens_total", "Prompt tokens of finished generations.", &self.prompt_tokens),
            ("doppler_generated_tokens_total", "Tokens generated.", &self.generated_tokens),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let gauges = [
            ("doppler_queue_waiting", "Generations waiting for the GPU.", queue.waiting.len()),
            (
                "doppler_queue_running",
                "Generations running on the GPU.",
                usize::from(queue.running.is_some()),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        }
        let name = "doppler_generation_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from queueing to the end of a generation.\n# TYPE {name} histogram"
        );
        let histogram = lock(&self.latency);
        let mut cumulative = 0;
        for (bound, count) in LATENCY_BUCKETS.iter().zip(histogram.counts) {
            cumulative += count;
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", histogram.count);
        let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", histogram.sum, histogram.count);
        out
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
