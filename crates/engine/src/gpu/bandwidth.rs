//! The adapter's peak memory bandwidth, measured: the ceiling of the profiler's roofline, which
//! the kernels' achieved GB/s is read against. No graphics API reports it, so a buffer-to-buffer
//! copy is timed with timestamp queries, once per adapter in the process.

use std::{
    collections::HashMap,
    sync::{LazyLock, Mutex},
};

use super::{context::GpuError, GpuContext};

/// Timed copies of one measurement: the fastest counts, the others absorb a clock that ramps up
/// or another submission that shares the GPU.
const TIMED_COPIES: u32 = 4;

/// What a discrete GPU copies: large enough to leave its caches (tens of MiB on recent ones)
/// far behind; an integrated GPU shares its memory with the host, and a CPU adapter copies on
/// the CPU at a few GB/s, where a few MiB already leave the caches and take milliseconds.
const DISCRETE_BYTES: u64 = 256 << 20;
const INTEGRATED_BYTES: u64 = 64 << 20;
const CPU_BYTES: u64 = 8 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BandwidthError {
    #[error("the adapter has no timestamp queries to time a copy with")]
    NoTimestamps,
    #[error("the timed copies took no time on the adapter's timestamp clock")]
    NoTimeMeasured,
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// Measured peaks by adapter (backend, vendor, device, name): a device opened again after a
/// loss is the same hardware.
static MEASURED: LazyLock<Mutex<HashMap<String, Option<f64>>>> = LazyLock::new(Mutex::default);

impl GpuContext {
    /// The adapter's peak memory bandwidth in GB/s (bytes read plus bytes written per ns of a
    /// large copy), measured on the first call for this adapter and kept for the process;
    /// `None` where it cannot be measured (no timestamp queries, no memory for the copy).
    pub fn peak_bandwidth(&self) -> Option<f64> {
        let info = &self.adapter_info;
        let key = format!("{:?}/{:x}/{:x}/{}", info.backend, info.vendor, info.device, info.name);
        let mut measured = MEASURED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *measured.entry(key).or_insert_with(|| {
            let bytes = self.bandwidth_probe_bytes();
            match self.measure_copy_bandwidth(bytes) {
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

    /// How many bytes the bandwidth probe copies on this adapter.
    pub fn bandwidth_probe_bytes(&self) -> u64 {
        let bytes = match self.adapter_info.device_type {
            wgpu::DeviceType::Cpu => CPU_BYTES,
            wgpu::DeviceType::IntegratedGpu => INTEGRATED_BYTES,
            _ => DISCRETE_BYTES,
        };
        bytes.min(self.caps.max_buffer_size) & !3
    }

    /// GB/s of the fastest of a few timed copies of `bytes` from one buffer to another, each
    /// counted as `2 × bytes` (read and written). Each copy sits between two empty compute
    /// passes whose timestamps mark when the work before it has finished, which needs only
    /// timestamp queries (not timestamps inside encoders).
    pub fn measure_copy_bandwidth(&self, bytes: u64) -> Result<f64, BandwidthError> {
        if !self.caps.timestamps {
            return Err(BandwidthError::NoTimestamps);
        }
        let queries = 2 * TIMED_COPIES;
        let (source, target, query_set, resolve, staging) =
            self.checked("allocating the bandwidth probe", || {
                let buffer = |label, size, usage| {
                    self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(label),
                        size,
                        usage,
                        mapped_at_creation: false,
                    })
                };
                let copy = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
                let timestamp_bytes = u64::from(queries) * 8;
                (
                    buffer("bandwidth probe source", bytes, copy),
                    buffer("bandwidth probe target", bytes, copy),
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
        let mut encoder = self.device.create_command_encoder(&Default::default());
        // Untimed first: the buffers' first touch (zeroing, page faults on a CPU adapter).
        encoder.copy_buffer_to_buffer(&source, 0, &target, 0, bytes);
        for copy in 0..TIMED_COPIES {
            let mark = |beginning_of_pass_write_index, end_of_pass_write_index| {
                let timestamp_writes = wgpu::ComputePassTimestampWrites {
                    query_set: &query_set,
                    beginning_of_pass_write_index,
                    end_of_pass_write_index,
                };
                wgpu::ComputePassDescriptor {
                    label: Some("bandwidth probe mark"),
                    timestamp_writes: Some(timestamp_writes),
                }
            };
            drop(encoder.begin_compute_pass(&mark(None, Some(2 * copy))));
            encoder.copy_buffer_to_buffer(&source, 0, &target, 0, bytes);
            drop(encoder.begin_compute_pass(&mark(Some(2 * copy + 1), None)));
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
        Ok(2.0 * bytes as f64 / fastest_ns)
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::{GpuContext, GpuOptions};

    #[test]
    fn a_timed_copy_gives_a_positive_finite_bandwidth_once_per_adapter() {
        let ctx = GpuContext::new(&GpuOptions { want_timestamps: true, ..GpuOptions::default() })
            .expect("a wgpu adapter");
        let bytes = ctx.bandwidth_probe_bytes();
        if ctx.adapter_info.device_type == wgpu::DeviceType::Cpu {
            assert_eq!(bytes, super::CPU_BYTES);
        }
        let peak = ctx.peak_bandwidth().expect("lavapipe has timestamp queries");
        assert!(peak.is_finite() && peak > 0.0, "{peak} GB/s");
        eprintln!("{}: {peak:.1} GB/s copying {bytes} bytes", ctx.adapter_info.name);
        // Kept for the process: the second answer is the first.
        assert_eq!(ctx.peak_bandwidth(), Some(peak));
    }
}
