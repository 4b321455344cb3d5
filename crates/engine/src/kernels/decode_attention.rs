//! Decode attention (a step of one token) split over key slices (`attention_decode.wgsl`):
//! workgroups over (heads, key slice) leave unnormalized partials, then one workgroup per query
//! head merges them. Two slices kernels write the same partials: the packed one, a workgroup
//! per (kv head, pack of up to four of its query heads, slice), where a kv head serves at least
//! three query heads of at most 128 values (`HeadShape::packs_pay`), and one workgroup per
//! (query head, slice) elsewhere. Where the layer asks for it, the merge writes the output in
//! Q8 form as well: the output projection then reads a quarter of the bytes through the wide
//! Q8 products with no quantization dispatch of its own.

use super::{
    attention::{check_heads, record_attention, AttentionLayer, AttentionParams, KvCache},
    fused_qk::{record_qk_rope_store, QkStep},
    make_dispatch, make_numbered_dispatch,
    matmul::{record_quantize_q8, Q8Vector},
    rope::RopeStyle,
    KernelError,
};
use crate::gpu::{grid, Define, GpuContext, GpuTensor, OpList, Workgroups};

/// Teams of a packed slices workgroup, each walking its own keys.
const STREAMS: u32 = 8;
/// Threads of a per-head slices workgroup and of the merge (one per slice for the stats, so
/// at least the most slices).
const WIDE_WORKGROUP_SIZE: u32 = 256;
/// Query heads a packed slices workgroup serves at once (the components of a vec4).
const QUERIES_PER_PACK: u32 = 4;
/// Fewest query heads per kv head for which the packed kernel pays (`HeadShape::packs_pay`).
const LEAST_PACKED_GROUP: u32 = 3;

/// How a decode attention layer cuts its keys into slices.
struct Slicing {
    /// Slices workgroups aimed for at long contexts, over all kv heads and packs.
    target_workgroups: Option<u32>,
    /// Most key slices per head: the merge reads every slice's values.
    most: u32,
    /// Fewest keys a slice is sized for, at load for the longest context and in the kernel
    /// for the step's: a short context fills only its first slices.
    min_keys: u32,
}

/// Packed: on an H200 (tg128 of Llama 8B and 1B at depth 4096) 256 workgroups and at most 64
/// slices beat 512 and 128 by 2–19%.
const PACKED_SLICING: Slicing = Slicing { target_workgroups: Some(256), most: 64, min_keys: 16 };
/// Per head: 32 slices, about one workgroup per SM of a large GPU with the 4 heads of the small
/// Gemma models; slices of at least 8 keys (measured on an H100, 1B tg128: 8 keys 518.7
/// tok/s, 16 keys 509, 32 keys 493).
const PER_HEAD_SLICING: Slicing = Slicing { target_workgroups: None, most: 32, min_keys: 8 };

/// The shape of a layer's attention heads.
#[derive(Debug, Clone, Copy)]
pub struct HeadShape {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
}

impl HeadShape {
    fn group(self) -> u32 {
        self.n_heads / self.n_kv_heads.max(1)
    }

    /// Packs of query heads per kv head.
    fn packs(self) -> u32 {
        self.group().div_ceil(QUERIES_PER_PACK)
    }

    /// Whether the packed kernel pays: on an H200 it decoded at depth 4096 Llama 3.1 8B 19%
    /// faster, Llama 3.2 1B 12%, Qwen2.5 7B 14%, Qwen3 4B 20% (at depth 0 within 1%, Qwen2.5
    /// 1.5B and Qwen3 4B 3–5% slower), but Gemma 3 270M and 4B (heads of 256 with q/k norms)
    /// 2–17% slower and Phi-3.5 (one query head per kv head) 1–4% slower
    /// (`bench/results/2026-11-27-decode-slices/`). Llama 3.2 3B's three query heads per kv
    /// head, one pack with a column idle, decoded 13% faster at depth 4096 than per head and
    /// the same at depth 0 (`bench/results/2026-11-27-h200-partial-packs/`).
    fn packs_pay(self) -> bool {
        self.group() >= LEAST_PACKED_GROUP && self.head_dim <= 128
    }

    fn slicing(self) -> &'static Slicing {
        if self.packs_pay() {
            &PACKED_SLICING
        } else {
            &PER_HEAD_SLICING
        }
    }

    /// Key slices per head for a layer that sees at most `max_keys` keys.
    fn key_slices(self, max_keys: u32) -> u32 {
        let slicing = self.slicing();
        let most = match slicing.target_workgroups {
            None => slicing.most,
            Some(target) => (target / (self.n_kv_heads * self.packs()).max(1)).clamp(1, slicing.most),
        };
        max_keys.div_ceil(slicing.min_keys).clamp(1, most)
    }

    /// Bytes of the per-slice values and (max, sum) stats of a layer over at most `max_keys`.
    fn split_buffer_sizes(self, max_keys: u32) -> (u64, u64) {
        let partials = u64::from(self.n_heads) * u64::from(self.key_slices(max_keys));
        (partials * u64::from(self.head_dim) * 4, partials * 8)
    }

    /// Scratch a decode attention layer keeps for its key slices.
    pub fn split_scratch_bytes(self, max_keys: u32) -> u64 {
        let (values, stats) = self.split_buffer_sizes(max_keys);
        values + stats
    }
}

/// How the packed slices kernel lays a key row over its threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedLayout {
    pub head_dim: u32,
    pub f16: bool,
    /// Lanes of a team: the row's 16-byte chunks rounded up to a power of two.
    pub lanes: u32,
    /// Team sums through subgroup shuffles (a team fits the smallest subgroup), else through
    /// shared memory.
    pub subgroups: bool,
}

impl PackedLayout {
    /// For heads of `cache`; None where a row is not whole 16-byte chunks or the kernel would
    /// not fit the adapter.
    pub fn new(ctx: &GpuContext, cache: &KvCache) -> Option<PackedLayout> {
        let values_per_chunk = if cache.f16 { 8 } else { 4 };
        if cache.head_dim == 0 || !cache.head_dim.is_multiple_of(values_per_chunk) {
            return None;
        }
        let lanes = (cache.head_dim / values_per_chunk).next_power_of_two();
        let subgroups = ctx.caps.subgroups && lanes <= ctx.caps.subgroup_min_size;
        let layout = PackedLayout { head_dim: cache.head_dim, f16: cache.f16, lanes, subgroups };
        let fits = layout.threads() <= ctx.caps.max_workgroup_invocations
            && layout.shared_bytes() <= ctx.caps.max_workgroup_storage_bytes;
        fits.then_some(layout)
    }

    /// STREAMS teams, fewer where that would pass the widest workgroup.
    fn threads(self) -> u32 {
        (self.lanes * STREAMS).min(WIDE_WORKGROUP_SIZE).max(self.lanes)
    }

    /// Shared memory the kernel declares with ROPE_STORE, QK_NORM and TURN_ROWS (the most): each
    /// stream's stats and each thread's values (both halves of its chunk with f16), the team sums'
    /// tree without subgroups, `qk_rope.wgsl`'s staged rows, their scales and their norms' tree,
    /// and the rows turned.
    pub fn shared_bytes(self) -> u32 {
        let streams = self.threads() / self.lanes;
        let tree = if self.subgroups { 0 } else { 2 * self.threads() * 16 };
        let rows = QUERIES_PER_PACK + 1;
        let rope_store = 2 * rows * self.head_dim * 4 + rows * 4 + rows * self.threads() * 4;
        let halves = if self.f16 { 2 } else { 1 };
        2 * streams * 16 + halves * self.threads() * 64 + tree + rope_store
    }

    pub fn defines(self, slices: u32) -> Vec<Define> {
        let mut defines = vec![
            Define::u32("WG", self.threads()),
            Define::u32("HEAD_DIM", self.head_dim),
            Define::u32("N_SPLITS", slices),
            Define::u32("MIN_SLICE_KEYS", PACKED_SLICING.min_keys),
            Define::u32("LANES", self.lanes),
        ];
        if self.f16 {
            defines.push(Define::flag("F16"));
        }
        if self.subgroups {
            defines.push(Define::flag("SUBGROUPS"));
        }
        defines
    }
}

/// The slices kernel a layer takes: packed where `packed` is a layout, else per head.
struct SlicesKernel {
    shape: HeadShape,
    packed: Option<PackedLayout>,
}

impl SlicesKernel {
    /// None where neither takes the cache's heads (the general kernel does).
    fn choose(ctx: &GpuContext, cache: &KvCache, shape: HeadShape) -> Option<SlicesKernel> {
        let packed = PackedLayout::new(ctx, cache).filter(|_| shape.packs_pay());
        // The per-head kernel gives each thread one vec4 column of a head.
        let per_head = cache.head_dim / 4 <= WIDE_WORKGROUP_SIZE;
        (packed.is_some() || per_head).then_some(SlicesKernel { shape, packed })
    }

    /// Entry point, defines and workgroups.
    fn dispatch(&self, cache: &KvCache, slices: u32) -> (&'static str, Vec<Define>, u32) {
        let shape = self.shape;
        match self.packed {
            Some(layout) => {
                ("split_partial", layout.defines(slices), shape.n_kv_heads * shape.packs() * slices)
            }
            None => {
                ("head_partial", per_head_defines(cache.head_dim, cache.f16, slices), shape.n_heads * slices)
            }
        }
    }
}

fn per_head_defines(head_dim: u32, f16: bool, slices: u32) -> Vec<Define> {
    let mut defines = vec![
        Define::u32("WG", WIDE_WORKGROUP_SIZE),
        Define::u32("HEAD_DIM", head_dim),
        Define::u32("N_SPLITS", slices),
        Define::u32("MIN_SLICE_KEYS", PER_HEAD_SLICING.min_keys),
        Define::flag("PER_HEAD"),
    ];
    if f16 {
        defines.push(Define::flag("F16"));
    }
    defines
}

/// The merge of `slices` partials a row, by workgroups of `threads` (at least `slices` and a
/// head's vec4 columns).
pub(super) fn merge_defines(head_dim: u32, slices: u32, threads: u32) -> [Define; 4] {
    [
        Define::u32("WG", threads),
        Define::u32("HEAD_DIM", head_dim),
        Define::u32("N_SPLITS", slices),
        Define::flag("MERGE"),
    ]
}

/// Records decode attention (a step of exactly one token) as in `record_attention`, split
/// over key slices, with the output's Q8 form where `layer.output_q8` asks for it.
pub fn record_decode_attention(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    queries: &GpuTensor,
    layer: &AttentionLayer,
) -> Result<(), KernelError> {
    let shape = head_shape(queries, layer)?;
    match SlicesKernel::choose(ctx, layer.cache, shape) {
        Some(kernel) => record_split_attention(ctx, ops, label, queries, layer, kernel, None),
        // The general kernel handles a single token as well.
        None => {
            record_attention(ctx, ops, label, queries, layer)?;
            match layer.output_q8 {
                Some(q8) => record_quantize_q8(ctx, ops, &format!("{label} q8 output"), layer.output, q8),
                None => Ok(()),
            }
        }
    }
}

/// As `record_qk_rope_store` (labelled `qk_label`) then `record_decode_attention` of the
/// rotated queries, in one dispatch fewer where the adapter can bind what that takes: the
/// attention slices do the q/k step themselves (attention_decode.wgsl's ROPE_STORE).
pub fn record_decode_attention_with_qk_step(
    ctx: &GpuContext,
    ops: &mut OpList,
    qk_label: &str,
    label: &str,
    qk: &QkStep,
    layer: &AttentionLayer,
) -> Result<(), KernelError> {
    let AttentionLayer { cache, step, .. } = *layer;
    let shape = head_shape(qk.rows.q, layer)?;
    qk.check("attention", cache)?;
    // q, both caches, the slices' values and stats, step, raw k and v, the table, the norms.
    let storage_buffers = 9 + if qk.norms.is_some() { 2 } else { 0 };
    match SlicesKernel::choose(ctx, cache, shape) {
        // The slices take no biases: the products add them where the adapter binds enough
        // buffers, and steps that still carry them take the q/k kernel.
        Some(kernel) if qk.bias.is_none() && storage_buffers <= ctx.caps.max_storage_buffers_per_stage => {
            record_split_attention(ctx, ops, label, qk.rows.q, layer, kernel, Some((qk_label, qk)))
        }
        _ => {
            record_qk_rope_store(ctx, ops, qk_label, qk, cache, step)?;
            record_decode_attention(ctx, ops, label, qk.rows.q, layer)
        }
    }
}

/// Whether the packed slices norm and rotate the staged q and k rows once into shared memory
/// (TURN_ROWS) rather than each thread its own chunks of every row: where a value's norm or
/// rotation reads beyond its chunk (norm weights, NEOX partners half a head away). H200, tg128
/// at depths 0 and 4096 (`bench/results/2026-11-28-h200-turned-rows/`): Qwen3 4B 315 → 344 and
/// 284 → 307 tok/s, Qwen2.5 1.5B +4-5%, 7B +2%; Llama's interleaved pairs without norms 0.4-1%
/// slower, so they keep rotating in place.
fn turns_rows(qk: &QkStep) -> bool {
    qk.norms.is_some() || qk.style == RopeStyle::Neox
}

fn head_shape(queries: &GpuTensor, layer: &AttentionLayer) -> Result<HeadShape, KernelError> {
    let n_heads = check_heads(queries, layer)?;
    Ok(HeadShape { n_heads, n_kv_heads: layer.cache.n_kv_heads, head_dim: layer.cache.head_dim })
}

fn record_split_attention(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    queries: &GpuTensor,
    layer: &AttentionLayer,
    kernel: SlicesKernel,
    qk: Option<(&str, &QkStep)>,
) -> Result<(), KernelError> {
    let AttentionLayer { cache, output, output_q8, step, window, .. } = *layer;
    let shape = kernel.shape;
    let max_keys = if window > 0 { window.min(cache.cache_len) } else { cache.cache_len };
    let slices = shape.key_slices(max_keys);
    let mut params = AttentionParams::new(layer, shape.n_heads);
    if let Some((_, qk)) = qk {
        (params.rot_dim, params.max_positions, params.eps) =
            (qk.table.rot_dim, qk.table.max_positions, qk.eps());
    }
    let (values_bytes, stats_bytes) = shape.split_buffer_sizes(max_keys);
    let split_acc = ctx.zeroed_storage(&format!("{label} slice values"), values_bytes);
    let split_stats = ctx.zeroed_storage(&format!("{label} slice stats"), stats_bytes);
    let max = ctx.caps.max_workgroups_per_dimension;
    let (entry, mut partial_defines, workgroups) = kernel.dispatch(cache, slices);
    partial_defines.extend(params.defines());
    let mut partial_buffers =
        vec![queries.buffer(), &cache.k, &cache.v, &split_acc, &split_stats, step.buffer()];
    let mut slices_label = format!("{label} slices");
    if let Some((qk_label, qk)) = qk {
        // One layer prefix, `blk.3.qk_norm_rope_store+attention slices`, so the profiler's
        // per-layer grouping still works.
        slices_label = format!("{qk_label}+{}", slices_label.rsplit('.').next().unwrap_or(&slices_label));
        partial_defines.push(Define::flag("ROPE_STORE"));
        partial_defines.extend(qk.defines());
        if kernel.packed.is_some() && turns_rows(qk) {
            partial_defines.push(Define::flag("TURN_ROWS"));
        }
        partial_buffers.extend([qk.rows.k.buffer(), qk.rows.v.buffer()]);
        partial_buffers.extend(qk.table_and_norms());
    }
    // Binding 6 stays free: the parameters are defines.
    let bound: Vec<(u32, &wgpu::Buffer)> = (0..6).chain(7..).zip(partial_buffers).collect();
    ops.push(make_numbered_dispatch(
        ctx,
        &slices_label,
        "attention_decode.wgsl",
        entry,
        &partial_defines,
        &bound,
        Workgroups::Fixed(grid(workgroups, max)),
    )?);
    let mut merge_defines = merge_defines(cache.head_dim, slices, WIDE_WORKGROUP_SIZE).to_vec();
    let mut merge_buffers = vec![&split_acc, &split_stats, output.buffer()];
    if let Some(q8) = output_q8 {
        check_q8_output(q8, shape)?;
        merge_defines.push(Define::flag("Q8_OUT"));
        merge_buffers.extend([q8.words.buffer(), q8.scales.buffer()]);
    }
    ops.push(make_dispatch(
        ctx,
        &format!("{label} merge"),
        "attention_decode.wgsl",
        "split_combine",
        &merge_defines,
        &merge_buffers,
        Workgroups::Fixed(grid(shape.n_heads, max)),
    )?);
    Ok(())
}

/// Errors unless `q8` is as wide as the query heads and each head holds whole Q8 blocks.
fn check_q8_output(q8: &Q8Vector, shape: HeadShape) -> Result<(), KernelError> {
    let width = shape.n_heads * shape.head_dim;
    if q8.len != width || !shape.head_dim.is_multiple_of(32) {
        return Err(KernelError::InvalidShape {
            kernel: "decode attention",
            message: format!(
                "a Q8 output of {} values for {} heads of {} (needs their width in whole 32-value blocks a head)",
                q8.len, shape.n_heads, shape.head_dim
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! naga parses, validates and translates every variant of the slices kernels and the merge
    //! to SPIR-V, and what the packed kernel declares in shared memory is what
    //! `PackedLayout::shared_bytes` budgets.
    use super::{
        merge_defines, per_head_defines, AttentionParams, HeadShape, PackedLayout, PACKED_SLICING,
        PER_HEAD_SLICING, WIDE_WORKGROUP_SIZE,
    };
    use crate::{
        gpu::Define,
        kernels::spirv_translation::{translate, workgroup_bytes},
    };

    const SHADER: &str = "attention_decode.wgsl";

    fn with_rope_store(mut defines: Vec<Define>) -> Vec<Define> {
        defines.extend([Define::flag("ROPE_STORE"), Define::flag("QK_NORM"), Define::flag("TURN_ROWS")]);
        defines
    }

    /// The slices kernels take a layer's parameters as defines, which naga folds: a real
    /// layer's, since zero heads would divide by zero.
    fn with_params(mut defines: Vec<Define>) -> Vec<Define> {
        defines.extend(AttentionParams::example().defines());
        defines
    }

    #[test]
    fn packed_kernel_translates_and_declares_its_budget() {
        for head_dim in [32u32, 64, 96, 128, 256] {
            for f16 in [true, false] {
                for subgroups in [true, false] {
                    let lanes = (head_dim / if f16 { 8 } else { 4 }).next_power_of_two();
                    let layout = PackedLayout { head_dim, f16, lanes, subgroups };
                    let module = translate(SHADER, &with_params(with_rope_store(layout.defines(64))));
                    assert_eq!(workgroup_bytes(&module, &[]), layout.shared_bytes(), "{layout:?}");
                    translate(SHADER, &with_params(layout.defines(1)));
                }
            }
        }
    }

    #[test]
    fn per_head_kernel_and_merge_translate() {
        for head_dim in [64u32, 96, 256] {
            for f16 in [true, false] {
                let defines = with_params(per_head_defines(head_dim, f16, PER_HEAD_SLICING.most));
                translate(SHADER, &defines);
                translate(SHADER, &with_rope_store(defines));
            }
            let most = PACKED_SLICING.most.max(PER_HEAD_SLICING.most);
            translate(SHADER, &merge_defines(head_dim, most, WIDE_WORKGROUP_SIZE));
        }
    }

    #[test]
    fn slices_grow_with_keys_up_to_each_kernels_bound() {
        let llama_8b = HeadShape { n_heads: 32, n_kv_heads: 8, head_dim: 128 };
        assert!(llama_8b.packs_pay());
        assert_eq!(llama_8b.key_slices(5), 1);
        assert_eq!(llama_8b.key_slices(17), 2);
        // 8 kv heads × 32 slices of 128 keys at 4,096.
        assert_eq!(llama_8b.key_slices(4096), 32);
        // Llama 3B: 8 kv heads of 3 query heads, one pack each (a column idle).
        let llama_3b = HeadShape { n_heads: 24, n_kv_heads: 8, head_dim: 128 };
        assert!(llama_3b.packs_pay());
        assert_eq!(llama_3b.key_slices(4096), 32);
        // Qwen 7B: 4 kv heads of 7 query heads, two packs each.
        let qwen_7b = HeadShape { n_heads: 28, n_kv_heads: 4, head_dim: 128 };
        assert_eq!(qwen_7b.key_slices(4096), 32);
        // One kv head: the packed kernel's bound.
        let one_kv = HeadShape { n_heads: 4, n_kv_heads: 1, head_dim: 64 };
        assert_eq!(one_kv.key_slices(1 << 20), PACKED_SLICING.most);
        // Gemma 270M: per head, 8 keys a slice up to 32 slices.
        let gemma = HeadShape { n_heads: 4, n_kv_heads: 1, head_dim: 256 };
        assert!(!gemma.packs_pay());
        assert_eq!(gemma.key_slices(100), 13);
        assert_eq!(gemma.key_slices(1 << 20), PER_HEAD_SLICING.most);
        // Every bound fits the merge's threads.
        assert!(PACKED_SLICING.most.max(PER_HEAD_SLICING.most) <= WIDE_WORKGROUP_SIZE);
    }
}
