use std::sync::Mutex;

use super::{
    context::GpuError,
    op_list::{encode_one, Dispatch},
    GpuContext,
};

/// wgpu caps a query set at 4096 queries; two per dispatch.
const MAX_QUERIES: u32 = 4096;

/// GPU time of one dispatch of a profiled step.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelTiming {
    pub label: String,
    pub nanoseconds: f64,
}

impl KernelTiming {
    /// The operation without its layer: "blk.12.attn_q" → "attn_q", "lm head" → "lm head".
    pub fn op(&self) -> &str {
        match self.label.strip_prefix("blk.") {
            Some(rest) => rest.split_once('.').map_or(rest, |(_, op)| op),
            None => &self.label,
        }
    }

    /// The transformer block the dispatch belongs to; `None` for the model-wide ones
    /// (embedding, final norm, output projection).
    pub fn layer(&self) -> Option<u32> {
        self.label.strip_prefix("blk.")?.split_once('.')?.0.parse().ok()
    }
}

/// Times every dispatch of a step with GPU timestamp queries. Only exists while profiling,
/// so an unprofiled step pays nothing.
pub struct KernelProfiler {
    query_set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
    period_ns: f32,
    inside_passes: bool,
    labels: Mutex<Vec<String>>,
}

impl KernelProfiler {
    /// `None` where the adapter has no timestamp queries.
    pub fn new(ctx: &GpuContext) -> Option<Self> {
        if !ctx.caps.timestamps {
            return None;
        }
        let query_set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("kernel profiler"),
            ty: wgpu::QueryType::Timestamp,
            count: MAX_QUERIES,
        });
        let bytes = u64::from(MAX_QUERIES) * 8;
        let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profiler resolve"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profiler staging"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Some(Self {
            query_set,
            resolve,
            staging,
            period_ns: ctx.queue.get_timestamp_period(),
            inside_passes: ctx.caps.timestamps_inside_passes,
            labels: Mutex::new(Vec::new()),
        })
    }

    pub(super) fn encode_timed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dispatches: &[&Dispatch],
        n_tokens: u32,
    ) {
        let timed = dispatches.len().min((MAX_QUERIES / 2) as usize);
        let mut labels = self.labels.lock().unwrap();
        labels.clear();
        labels.extend(dispatches[..timed].iter().map(|d| d.label.to_string()));
        if self.inside_passes {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("profiled step"),
                timestamp_writes: None,
            });
            for (i, dispatch) in dispatches.iter().enumerate() {
                if i < timed {
                    pass.write_timestamp(&self.query_set, 2 * i as u32);
                }
                encode_one(&mut pass, dispatch, n_tokens);
                if i < timed {
                    pass.write_timestamp(&self.query_set, 2 * i as u32 + 1);
                }
            }
        } else {
            for (i, dispatch) in dispatches.iter().enumerate() {
                let timestamp_writes = (i < timed).then(|| wgpu::ComputePassTimestampWrites {
                    query_set: &self.query_set,
                    beginning_of_pass_write_index: Some(2 * i as u32),
                    end_of_pass_write_index: Some(2 * i as u32 + 1),
                });
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("profiled dispatch"),
                    timestamp_writes,
                });
                encode_one(&mut pass, dispatch, n_tokens);
            }
        }
        let queries = 2 * timed as u32;
        if queries > 0 {
            encoder.resolve_query_set(&self.query_set, 0..queries, &self.resolve, 0);
            encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.staging, 0, u64::from(queries) * 8);
        }
    }

    /// The timings of the last profiled step; call after its submit.
    pub fn read(&self, ctx: &GpuContext) -> Result<Vec<KernelTiming>, GpuError> {
        self.read_after(ctx, None)
    }

    /// As `read`, waiting only for `submission` (the profiled step's), not for work queued
    /// after it: sampled profiles must not drain the decode pipeline.
    pub fn read_after(
        &self,
        ctx: &GpuContext,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<Vec<KernelTiming>, GpuError> {
        let labels = self.labels.lock().unwrap().clone();
        if labels.is_empty() {
            return Ok(Vec::new());
        }
        let bytes = ctx.map_and_read_after(&self.staging, labels.len() as u64 * 16, submission)?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        Ok(labels
            .into_iter()
            .enumerate()
            .map(|(i, label)| KernelTiming {
                label,
                nanoseconds: ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * f64::from(self.period_ns),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::KernelTiming;

    fn timing(label: &str) -> KernelTiming {
        KernelTiming { label: label.to_string(), nanoseconds: 1.0 }
    }

    #[test]
    fn labels_split_into_layer_and_op() {
        assert_eq!(timing("blk.12.attn_q+attn_k+attn_v").op(), "attn_q+attn_k+attn_v");
        assert_eq!(timing("blk.12.attn_q+attn_k+attn_v").layer(), Some(12));
        assert_eq!(timing("blk.0.qkv_bias.q").op(), "qkv_bias.q");
        assert_eq!(timing("lm head").op(), "lm head");
        assert_eq!(timing("lm head").layer(), None);
        assert_eq!(timing("blk.x.attention").layer(), None);
    }
}
