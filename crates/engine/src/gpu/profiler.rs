use std::sync::{Arc, Mutex};

use serde::{Serialize, Serializer};

use super::{
    context::GpuError,
    op_list::{encode_one, Dispatch},
    pipeline_cache::KernelVariant,
    GpuContext,
};

/// wgpu caps a query set at 4096 queries; two per dispatch.
const MAX_QUERIES: u32 = 4096;

/// GPU time of one dispatch of a profiled step.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelTiming {
    pub label: String,
    pub nanoseconds: f64,
    /// Weight bytes the dispatch read (`Dispatch::weight_bytes` for the step's tokens);
    /// `None` for kernels that read no weight matrix.
    pub weight_bytes: Option<u64>,
    /// The variant the dispatch's pipeline was compiled as (shared with the pipeline).
    #[serde(serialize_with = "serialize_shared")]
    pub variant: Arc<KernelVariant>,
}

fn serialize_shared<S: Serializer>(variant: &Arc<KernelVariant>, serializer: S) -> Result<S::Ok, S::Error> {
    variant.as_ref().serialize(serializer)
}

impl KernelTiming {
    /// Achieved weight bandwidth, where the dispatch read weights.
    pub fn gigabytes_per_second(&self) -> Option<f64> {
        WeightTraffic::of([self]).gigabytes_per_second()
    }

    /// The operation without its layer: "blk.12.attn_q" → "attn_q", "lm head" → "lm head".
    pub fn op(&self) -> &str {
        op_of(&self.label)
    }

    /// The transformer block the dispatch belongs to; `None` for the model-wide ones
    /// (embedding, final norm, output projection).
    pub fn layer(&self) -> Option<u32> {
        self.label.strip_prefix("blk.")?.split_once('.')?.0.parse().ok()
    }
}

/// A dispatch label's operation without its layer: "blk.12.attn_q" → "attn_q".
pub(super) fn op_of(label: &str) -> &str {
    match label.strip_prefix("blk.") {
        Some(rest) => rest.split_once('.').map_or(rest, |(_, op)| op),
        None => label,
    }
}

/// Weight bytes and GPU time of the dispatches that read weights, summed: the achieved
/// bandwidth of a kernel over its layers and steps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WeightTraffic {
    pub bytes: u64,
    pub nanoseconds: f64,
}

impl WeightTraffic {
    pub fn of<'a>(timings: impl IntoIterator<Item = &'a KernelTiming>) -> Self {
        let mut traffic = Self::default();
        for timing in timings {
            traffic.add(timing);
        }
        traffic
    }

    pub fn add(&mut self, timing: &KernelTiming) {
        if let Some(bytes) = timing.weight_bytes {
            self.bytes += bytes;
            self.nanoseconds += timing.nanoseconds;
        }
    }

    /// Bytes per nanosecond are GB/s; `None` where nothing read weights in measurable time.
    pub fn gigabytes_per_second(&self) -> Option<f64> {
        (self.bytes > 0 && self.nanoseconds > 0.0).then(|| self.bytes as f64 / self.nanoseconds)
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
    /// Each timed dispatch of the last step, its time still zero until read back.
    timed: Mutex<Vec<KernelTiming>>,
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
            timed: Mutex::new(Vec::new()),
        })
    }

    pub(super) fn encode_timed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dispatches: &[&Dispatch],
        n_tokens: u32,
    ) {
        let timed = dispatches.len().min((MAX_QUERIES / 2) as usize);
        let mut timed_dispatches = self.timed.lock().unwrap();
        timed_dispatches.clear();
        timed_dispatches.extend(dispatches[..timed].iter().map(|dispatch| KernelTiming {
            label: dispatch.label.to_string(),
            nanoseconds: 0.0,
            weight_bytes: dispatch.weight_bytes.map(|bytes| bytes.resolve(n_tokens)),
            variant: dispatch.pipeline.variant.clone(),
        }));
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
        let timed = self.timed.lock().unwrap().clone();
        if timed.is_empty() {
            return Ok(Vec::new());
        }
        let bytes = ctx.map_and_read_after(&self.staging, timed.len() as u64 * 16, submission)?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        Ok(timed
            .into_iter()
            .enumerate()
            .map(|(i, timing)| KernelTiming {
                nanoseconds: ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * f64::from(self.period_ns),
                ..timing
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{KernelProfiler, KernelTiming, KernelVariant, WeightTraffic};
    use crate::{
        gguf::GgmlType,
        gpu::{Element, GpuContext, GpuMatrix, GpuOptions, GpuTensor, OpList, StepBuffer},
        kernels::{base_defines, elementwise::record_add, matmul::record_matvec},
    };

    fn timing(label: &str) -> KernelTiming {
        let variant = KernelVariant {
            shader: "elementwise.wgsl".into(),
            entry: "add".into(),
            defines: vec!["WG=64u".into()],
            workgroup_size: [64, 1, 1],
        };
        KernelTiming {
            label: label.to_string(),
            nanoseconds: 1.0,
            weight_bytes: None,
            variant: Arc::new(variant),
        }
    }

    #[test]
    fn each_timing_carries_the_variant_of_the_pipeline_its_dispatch_was_built_from() {
        let ctx = GpuContext::new(&GpuOptions { want_timestamps: true, ..GpuOptions::default() })
            .expect("a wgpu adapter");
        let (row_len, rows) = (64u32, 8u32);
        let weights = vec![0.5f32; (row_len * rows) as usize];
        let w = GpuMatrix::upload(
            &ctx,
            "w",
            GgmlType::F32,
            row_len.into(),
            rows.into(),
            bytemuck::cast_slice(&weights),
        )
        .unwrap();
        let x = GpuTensor::zeroed(&ctx, "x", 1, row_len, Element::F32);
        let y = GpuTensor::zeroed(&ctx, "y", 1, rows, Element::F32);
        let step = StepBuffer::new(&ctx);
        step.write(&ctx.queue, 0, 1);
        let mut ops = OpList::new();
        record_add(&ctx, &mut ops, "blk.0.add", &x, &x, &step).unwrap();
        record_matvec(&ctx, &mut ops, "blk.0.attn_q", &w, &x, &y).unwrap();
        record_add(&ctx, &mut ops, "blk.1.add", &x, &x, &step).unwrap();

        let profiler = KernelProfiler::new(&ctx).expect("an adapter with timestamp queries");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        ops.encode(&mut encoder, 1, Some(&profiler));
        ctx.queue.submit([encoder.finish()]);
        let timings = profiler.read(&ctx).unwrap();

        // The cache hands out the pipeline the recorder built: its variant is the timing's.
        let add = ctx.pipeline("elementwise.wgsl", "add", &base_defines()).unwrap();
        assert!(
            Arc::ptr_eq(&timings[0].variant, &add.variant) && Arc::ptr_eq(&timings[2].variant, &add.variant)
        );
        assert_eq!(*timings[0].variant, timing("blk.0.add").variant.as_ref().clone());
        let product = &timings[1].variant;
        assert_eq!((product.shader.as_str(), product.entry.as_str()), ("matmul_vector.wgsl", "main"));
        assert!(product.defines.iter().any(|define| define == "TYPE_F32"), "{product}");
        assert!(product.workgroup_size.iter().product::<u32>() > 1, "{product}");
        let mut sorted = product.defines.clone();
        sorted.sort();
        assert_eq!(product.defines, sorted);
        assert_eq!(add.variant.to_string(), "elementwise.wgsl:add [WG=64u] 64×1×1");
    }

    #[test]
    fn labels_split_into_layer_and_op() {
        assert_eq!(timing("blk.12.attn_q+attn_k+attn_v").op(), "attn_q+attn_k+attn_v");
        assert_eq!(timing("blk.12.attn_q+attn_k+attn_v").layer(), Some(12));
        assert_eq!(timing("lm head").op(), "lm head");
        assert_eq!(timing("lm head").layer(), None);
        assert_eq!(timing("blk.x.attention").layer(), None);
    }

    #[test]
    fn bandwidth_counts_only_the_dispatches_that_read_weights() {
        let read =
            |bytes, nanoseconds| KernelTiming { nanoseconds, weight_bytes: Some(bytes), ..timing("lm head") };
        assert_eq!(timing("attention").gigabytes_per_second(), None);
        assert_eq!(read(3_000, 2.0).gigabytes_per_second(), Some(1_500.0));
        assert_eq!(read(3_000, 0.0).gigabytes_per_second(), None);
        let traffic = WeightTraffic::of(&[read(1_000, 1.0), timing("attention"), read(2_000, 3.0)]);
        assert_eq!(traffic, WeightTraffic { bytes: 3_000, nanoseconds: 4.0 });
        assert_eq!(traffic.gigabytes_per_second(), Some(750.0));
    }
}
