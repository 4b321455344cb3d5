//! The adapter's peak memory bandwidth, measured: the ceiling of the profiler's roofline, which
//! the kernels' achieved GB/s is read against. No graphics API reports it, so a kernel that
//! streams a large buffer is timed with timestamp queries, once per adapter in the process.

use std::{
    collections::HashMap,
    sync::{LazyLock, Mutex},
};

use super::{context::GpuError, Define, GpuContext, PipelineError};

/// Timed runs of one measurement: the fastest counts, the others absorb a clock that ramps up
/// or another submission that shares the GPU.
const TIMED_RUNS: u32 = 4;

/// Threads per workgroup and workgroups of the probe: enough loads in flight to fill a large
/// GPU's memory system (about 8 workgroups of 256 threads per SM of an H100).
const PROBE_THREADS: u32 = 256;
const PROBE_WORKGROUPS: u32 = 1024;

/// What a discrete GPU reads: large enough to leave its caches (tens of MiB on recent ones)
/// far behind; an integrated GPU shares its memory with the host, and a CPU adapter copies on
/// the CPU at a few GB/s, where a few MiB already leave the caches and take milliseconds.
const DISCRETE_BYTES: u64 = 256 << 20;
const INTEGRATED_BYTES: u64 = 64 << 20;
const CPU_BYTES: u64 = 8 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BandwidthError {
    #[error("the adapter has no timestamp queries to time the probe with")]
    NoTimestamps,
    #[error("the timed runs took no time on the adapter's timestamp clock")]
    NoTimeMeasured,
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// Measured peaks by adapter (backend, vendor, device, name): a device opened again after a
/// loss is the same hardware.
static MEASURED: LazyLock<Mutex<HashMap<String, Option<f64>>>> = LazyLock::new(Mutex::default);

impl GpuContext {
    /// The adapter's peak memory bandwidth in GB/s (bytes read per ns by a kernel streaming a
    /// large buffer), measured on the first call for this adapter and kept for the process;
    /// `None` where it cannot be measured (no timestamp queries, no memory for the copy).
    pub fn peak_bandwidth(&self) -> Option<f64> {
        let info = &self.adapter_info;
        let key = format!("{:?}/{:x}/{:x}/{}", info.backend, info.vendor, info.device, info.name);
        let mut measured = MEASURED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *measured.entry(key).or_insert_with(|| {
            let bytes = self.bandwidth_probe_bytes();
            match self.measure_read_bandwidth(bytes) {
                Ok(gigabytes_per_second) => {
                    tracing::info!(gigabytes_per_second, bytes, "peak memory bandwidth measured");
                    Some(gigabytes_per_second)
                }
                Err(error) => {
                    tracing::warn!(%error, "peak memory bandwidth not measured");
                    None
                }
            }
        })
    }

    /// How many bytes the bandwidth probe reads on this adapter.
    pub fn bandwidth_probe_bytes(&self) -> u64 {
        let bytes = match self.adapter_info.device_type {
            wgpu::DeviceType::Cpu => CPU_BYTES,
            wgpu::DeviceType::IntegratedGpu => INTEGRATED_BYTES,
            _ => DISCRETE_BYTES,
        };
        bytes.min(self.caps.max_buffer_size) & !3
    }

    /// GB/s of the fastest of a few timed runs of a kernel that reads `bytes` once
    /// (`bandwidth_probe.wgsl`), counting the bytes read as the profiler counts a kernel's
    /// weight bytes, so the two compare. Each run is a compute pass timed at its ends. A
    /// buffer-to-buffer copy was timed first: on an H200 it reached 839 GB/s, below what the
    /// decode kernels read, since drivers may copy by other paths than the shader cores.
    pub fn measure_read_bandwidth(&self, bytes: u64) -> Result<f64, BandwidthError> {
        if !self.caps.timestamps {
            return Err(BandwidthError::NoTimestamps);
        }
        let queries = 2 * TIMED_RUNS;
        let pipeline = self.pipeline("bandwidth_probe.wgsl", "main", &[Define::u32("WG", PROBE_THREADS)])?;
        let (source, folded, query_set, resolve, staging) =
            self.checked("allocating the bandwidth probe", || {
                let buffer = |label, size, usage| {
                    self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(label),
                        size,
                        usage,
                        mapped_at_creation: false,
                    })
                };
                let timestamp_bytes = u64::from(queries) * 8;
                (
                    buffer("bandwidth probe source", bytes, wgpu::BufferUsages::STORAGE),
                    buffer(
                        "bandwidth probe folded",
                        u64::from(PROBE_WORKGROUPS) * 4,
                        wgpu::BufferUsages::STORAGE,
                    ),
                    self.device.create_query_set(&wgpu::QuerySetDescriptor {
                        label: Some("bandwidth probe"),
                        ty: wgpu::QueryType::Timestamp,
                        count: queries,
                    }),
                    buffer(
                        "bandwidth probe resolve",
                        timestamp_bytes,
                        wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    ),
                    buffer(
                        "bandwidth probe staging",
                        timestamp_bytes,
                        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    ),
                )
            })?;
        let bind_group = self.bind_group("bandwidth probe", &pipeline, &[&source, &folded]);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        // Untimed first: the buffer's first touch (zeroing, page faults on a CPU adapter).
        for run in 0..=TIMED_RUNS {
            let timestamp_writes = (run > 0).then(|| wgpu::ComputePassTimestampWrites {
                query_set: &query_set,
                beginning_of_pass_write_index: Some(2 * (run - 1)),
                end_of_pass_write_index: Some(2 * (run - 1) + 1),
            });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("bandwidth probe"),
                timestamp_writes,
            });
            pass.set_pipeline(&pipeline.compute);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(PROBE_WORKGROUPS, 1, 1);
        }
        encoder.resolve_query_set(&query_set, 0..queries, &resolve, 0);
        encoder.copy_buffer_to_buffer(&resolve, 0, &staging, 0, resolve.size());
        let submission = self.submit("bandwidth probe", encoder);
        let ticks = self.map_and_read_after(&staging, staging.size(), Some(submission))?;
        let ticks: &[u64] = bytemuck::cast_slice(&ticks);
        let period_ns = f64::from(self.queue.get_timestamp_period());
        let fastest_ns = ticks
            .chunks_exact(2)
            .map(|pair| pair[1].saturating_sub(pair[0]) as f64 * period_ns)
            .filter(|ns| *ns > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !fastest_ns.is_finite() {
            return Err(BandwidthError::NoTimeMeasured);
        }
        Ok(bytes as f64 / fastest_ns)
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::{GpuContext, GpuOptions};

    #[test]
    fn a_timed_read_gives_a_positive_finite_bandwidth_once_per_adapter() {
        let ctx = GpuContext::new(&GpuOptions { want_timestamps: true, ..GpuOptions::default() })
            .expect("a wgpu adapter");
        let bytes = ctx.bandwidth_probe_bytes();
        if ctx.adapter_info.device_type == wgpu::DeviceType::Cpu {
            assert_eq!(bytes, super::CPU_BYTES);
        }
        let peak = ctx.peak_bandwidth().expect("lavapipe has timestamp queries");
        assert!(peak.is_finite() && peak > 0.0, "{peak} GB/s");
        eprintln!("{}: {peak:.1} GB/s reading {bytes} bytes", ctx.adapter_info.name);
        // Kept for the process: the second answer is the first.
        assert_eq!(ctx.peak_bandwidth(), Some(peak));
    }
}
