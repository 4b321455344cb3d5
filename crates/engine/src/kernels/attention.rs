use bytemuck::{Pod, Zeroable};

use super::{
    base_defines, check_same_rows, check_width, decode_attention::merge_defines, make_dispatch,
    matmul::Q8Vector, threads_per_token, workgroups_per_token, KernelError,
};
use crate::gpu::{grid, Define, GpuCapabilities, GpuContext, GpuTensor, OpList, StepBuffer, Workgroups};

/// One layer's keys and values: [cache_len, n_kv_heads, head_dim], f16 where the adapter has
/// shader-f16, else f32. Position p lives in slot p mod cache_len, so a sliding-window layer
/// only keeps its window (plus one batch, which a prefill step writes before it reads).
pub struct KvCache {
    pub k: wgpu::Buffer,
    pub v: wgpu::Buffer,
    pub cache_len: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub f16: bool,
}

impl KvCache {
    /// Bytes of a layer's keys and values together.
    pub fn bytes(cache_len: u32, n_kv_heads: u32, head_dim: u32, f16: bool) -> u64 {
        2 * Self::half_bytes(cache_len, n_kv_heads, head_dim, f16)
    }

    fn half_bytes(cache_len: u32, n_kv_heads: u32, head_dim: u32, f16: bool) -> u64 {
        u64::from(cache_len) * u64::from(n_kv_heads) * u64::from(head_dim) * if f16 { 2 } else { 4 }
    }

    pub fn new(ctx: &GpuContext, label: &str, cache_len: u32, n_kv_heads: u32, head_dim: u32) -> Self {
        let f16 = ctx.caps.shader_f16;
        let bytes = Self::half_bytes(cache_len, n_kv_heads, head_dim, f16);
        Self {
            k: ctx.zeroed_storage(&format!("{label} k"), bytes),
            v: ctx.zeroed_storage(&format!("{label} v"), bytes),
            cache_len,
            n_kv_heads,
            head_dim,
            f16,
        }
    }

    pub fn size_bytes(&self) -> u64 {
        self.k.size() + self.v.size()
    }

    fn defines(&self) -> Vec<Define> {
        let mut defines = base_defines();
        if self.f16 {
            defines.push(Define::flag("F16"));
        }
        defines
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct KvStoreParams {
    row_len: u32,
    cache_len: u32,
    _pad: [u32; 2],
}

#[cfg(test)]
#[test]
fn kv_store_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(KvStoreParams, "kv_store.wgsl", "Params", { row_len: u32, cache_len: u32 });
}

/// Records copying this step's `keys` and `values` (rows of n_kv_heads·head_dim) into the cache.
pub fn record_kv_store(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    cache: &KvCache,
    keys: &GpuTensor,
    values: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let row_len = cache.n_kv_heads * cache.head_dim;
    check_width("kv store", "keys", keys, row_len)?;
    check_width("kv store", "values", values, row_len)?;
    let params =
        ctx.uniform_buffer(label, &KvStoreParams { row_len, cache_len: cache.cache_len, _pad: [0; 2] });
    let defines = cache.defines();
    for (source, target, which) in [(keys, &cache.k, "k"), (values, &cache.v, "v")] {
        let name = format!("{label} {which}");
        ops.push(make_dispatch(
            ctx,
            &name,
            "kv_store.wgsl",
            "main",
            &defines,
            &[source.buffer(), target, step.buffer(), &params],
            threads_per_token(ctx, row_len),
        )?);
    }
    Ok(())
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct AttentionParams {
    n_heads: u32,
    n_kv_heads: u32,
    cache_len: u32,
    window: u32,
    scale: f32,
    pub(super) rot_dim: u32,
    pub(super) max_positions: u32,
    pub(super) eps: f32,
}

#[cfg(test)]
#[test]
fn attention_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(AttentionParams, "attention.wgsl", "Params", { n_heads: u32, n_kv_heads: u32, cache_len: u32, window: u32, scale: f32, rot_dim: u32, max_positions: u32, eps: f32 });
}

impl AttentionParams {
    /// Without a q/k step in the kernel.
    pub(super) fn new(layer: &AttentionLayer, n_heads: u32) -> Self {
        let cache = layer.cache;
        Self {
            n_heads,
            n_kv_heads: cache.n_kv_heads,
            cache_len: cache.cache_len,
            window: layer.window,
            scale: layer.scale,
            rot_dim: 0,
            max_positions: 0,
            eps: 0.0,
        }
    }

    /// A layer of Llama 3.2 3B's shape with a q/k step, for tests that translate the kernels.
    #[cfg(test)]
    pub(super) fn example() -> Self {
        let (n_heads, n_kv_heads, cache_len, window, scale) = (24, 8, 4096, 0, 0.125);
        Self { n_heads, n_kv_heads, cache_len, window, scale, rot_dim: 128, max_positions: 4096, eps: 1e-5 }
    }

    /// The fields as P_* defines, for the decode kernels that take them so.
    pub(super) fn defines(&self) -> [Define; 8] {
        [
            Define::u32("P_N_HEADS", self.n_heads),
            Define::u32("P_N_KV_HEADS", self.n_kv_heads),
            Define::u32("P_CACHE_LEN", self.cache_len),
            Define::u32("P_WINDOW", self.window),
            Define::f32("P_SCALE", self.scale),
            Define::u32("P_ROT_DIM", self.rot_dim),
            Define::u32("P_MAX_POSITIONS", self.max_positions),
            Define::f32("P_EPS", self.eps),
        ]
    }
}

/// What every attention recorder takes besides its queries: causal attention over `cache`
/// into `output` (rows of the query heads' width) for the tokens of `step`, scores scaled by
/// `scale`. `window` 0 means full attention; otherwise a query at p sees keys p - window + 1 ..= p.
#[derive(Clone, Copy)]
pub struct AttentionLayer<'a> {
    pub cache: &'a KvCache,
    pub output: &'a GpuTensor,
    /// Decode: the output in Q8 form as well, for the products that read it that way (the
    /// slices' merge writes it; heads of whole 32-value blocks). Prefill leaves it.
    pub output_q8: Option<&'a Q8Vector>,
    /// Prefill on the tensor cores: where the kernel leaves the partials of its key splits (a
    /// session's one `FlashPartials`); without them each block of queries keeps to one
    /// workgroup. Decode leaves it.
    pub flash_partials: Option<&'a FlashPartials>,
    pub step: &'a StepBuffer,
    pub window: u32,
    pub scale: f32,
}

/// Records attention of `queries` (rows of n_heads · head_dim) as `layer` says.
pub fn record_attention(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    queries: &GpuTensor,
    layer: &AttentionLayer,
) -> Result<(), KernelError> {
    let AttentionLayer { cache, output, step, .. } = *layer;
    let n_heads = check_heads(queries, layer)?;
    let params = ctx.uniform_buffer(label, &AttentionParams::new(layer, n_heads));
    let buffers = [queries.buffer(), &cache.k, &cache.v, output.buffer(), step.buffer(), &params];
    if let Some(tile) = FlashTile::for_cache(ctx, cache) {
        let partials = layer.flash_partials.map(|partials| partials.check(layer, n_heads)).transpose()?;
        let splits = if partials.is_some() { KeySplits::CHOSEN } else { KeySplits::NONE };
        let (max, rows) = (ctx.caps.max_workgroups_per_dimension, tile.rows);
        let workgroups = Workgroups::PerStep(Box::new(move |n_tokens| {
            let blocks = n_tokens.div_ceil(rows);
            grid(blocks * n_heads * splits.per_block(blocks, n_heads), max)
        }));
        let mut flash_buffers = buffers.to_vec();
        if let Some(partials) = partials {
            flash_buffers.extend([&partials.values, &partials.stats]);
        }
        ops.push(make_dispatch(
            ctx,
            label,
            "attention_flash.wgsl",
            "main",
            &tile.defines(splits),
            &flash_buffers,
            workgroups,
        )?);
        if let Some(partials) = partials {
            // A workgroup per (token, head) row, none for a step whose blocks are not split.
            let workgroups = Workgroups::PerStep(Box::new(move |n_tokens| {
                match splits.per_block(n_tokens.div_ceil(rows), n_heads) {
                    1 => [0; 3],
                    _ => grid(n_tokens * n_heads, max),
                }
            }));
            let merge_buffers = [&partials.values, &partials.stats, output.buffer(), step.buffer(), &params];
            ops.push(make_dispatch(
                ctx,
                &format!("{label} merge"),
                "attention_decode.wgsl",
                "split_combine",
                &tile.merge_defines(splits),
                &merge_buffers,
                workgroups,
            )?);
        }
        return Ok(());
    }
    let mut defines = cache.defines();
    defines.push(Define::u32("HEAD_DIM", cache.head_dim));
    let columns = cache.head_dim / 4;
    let threads = block_workgroup_size(&ctx.caps);
    if ctx.caps.subgroups && columns <= threads && threads.is_multiple_of(columns) {
        defines.retain(|d| d.name != "WG");
        defines.extend([
            Define::flag("BLOCK"),
            Define::u32("WG", threads),
            Define::u32("QUERIES", QUERIES_PER_BLOCK),
            Define::u32("MAX_SUBGROUPS", threads / ctx.caps.subgroup_min_size.max(1)),
        ]);
        let max = ctx.caps.max_workgroups_per_dimension;
        let workgroups = Workgroups::PerStep(Box::new(move |n_tokens| {
            grid(n_tokens.div_ceil(QUERIES_PER_BLOCK) * n_heads, max)
        }));
        ops.push(make_dispatch(ctx, label, "attention.wgsl", "block_main", &defines, &buffers, workgroups)?);
    } else {
        ops.push(make_dispatch(
            ctx,
            label,
            "attention.wgsl",
            "main",
            &defines,
            &buffers,
            workgroups_per_token(ctx, n_heads),
        )?);
    }
    Ok(())
}

/// The tensor-core prefill kernel's tile (`attention_flash.wgsl`): `rows` queries per
/// workgroup, `keys` keys at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlashTile {
    pub rows: u32,
    pub keys: u32,
    pub head_dim: u32,
    /// Dimensions of the head each subgroup's accumulators hold: 16, 32 or 64.
    pub slab: u32,
    /// Each subgroup keeps its row block's query fragments in registers for the scores, and
    /// the query tile, staged once, shares the key tile's shared memory.
    pub query_registers: bool,
}

impl FlashTile {
    /// Where the adapter multiplies on cooperative matrices and the cache suits the kernel: f16,
    /// and a head dimension that is a multiple of 32 (64, 96, 128, 256).
    pub fn for_cache(ctx: &GpuContext, cache: &KvCache) -> Option<FlashTile> {
        let suits = ctx.caps.cooperative_matrix && cache.f16 && Self::suits(cache.head_dim);
        if !suits {
            return None;
        }
        FlashTile::new(cache.head_dim, ctx.caps.max_workgroup_storage_bytes)
    }

    /// Whether the kernel takes heads of `head_dim` values: a multiple of 32 (64, 96, 128, 256).
    pub fn suits(head_dim: u32) -> bool {
        head_dim.is_multiple_of(32)
    }

    /// 64 queries per workgroup for heads up to 128, 32 for wider ones. Heads of 64, 96, 128 and
    /// 256 keep their query fragments in registers and take keys 64 at a time (on an H200 pp512 at
    /// depth 4096 5-9% faster than the staged query tile with 32-key tiles on the Llama 1B-8B and
    /// Qwen shapes, 8% on Phi-3.5, 1-2% on Gemma 3 4B and 12B;
    /// `bench/results/2026-11-27-h200-query-registers/`, `…-query-registers-256/`,
    /// `bench/results/2026-11-28-h200-attention-scalar/`). Otherwise, and where that
    /// tile would not fit `max_shared_bytes`, the query tile is staged and keys go 64 at a time
    /// or fewer (32 for heads of 96 and 128: 64 rows of 32-key tiles prefilled Llama 8B and
    /// Phi-3.5 at depth 4096 15-18% faster than 32 rows of 64-key tiles, and 16 rows were 3×
    /// slower; `bench/results/2026-11-27-h200-flash-rows/`). All in `slab_for`'s slabs first,
    /// then in wider ones (32, 64), whose fewer subgroups stage fewer output fragments, for
    /// adapters with less shared memory.
    pub fn new(head_dim: u32, max_shared_bytes: u32) -> Option<FlashTile> {
        let rows = Self::rows_for(head_dim);
        let preferred = Self::slab_for(head_dim);
        let wider = [32, 64].into_iter().filter(|&slab| slab > preferred && head_dim.is_multiple_of(slab));
        let mut tiles = std::iter::once(preferred).chain(wider).flat_map(|slab| {
            let registers = Self::query_registers_suit(head_dim).then_some(FlashTile {
                rows,
                keys: 64,
                head_dim,
                slab,
                query_registers: true,
            });
            let staged =
                [64, 32, 16].map(|keys| FlashTile { rows, keys, head_dim, slab, query_registers: false });
            registers.into_iter().chain(staged)
        });
        tiles.find(|tile| tile.shared_bytes() <= max_shared_bytes)
    }

    /// Query fragments stay in registers where each subgroup's share of a tile's scores is
    /// whole key blocks of its own row block: heads of 64, 96, 128 and 256 (4, 6, 8 or 16
    /// fragments; the query tile is staged in the key tile, which has at least as many rows).
    fn query_registers_suit(head_dim: u32) -> bool {
        matches!(head_dim, 64 | 96 | 128 | 256)
    }

    fn rows_for(head_dim: u32) -> u32 {
        if head_dim <= 128 {
            64
        } else {
            32
        }
    }

    /// Dimensions per subgroup: 32 for heads up to 128, whose workgroups then have twice or four
    /// times the threads for the scalar passes (on an H200 pp512 at depth 4096 +11% on Llama
    /// 3.2 1B, +1-2% on Llama 3.1 8B and Qwen3 4B over slabs of 64), and 64 for wider ones
    /// (Gemma 3's 256: 512 threads over 32 rows took 60% longer;
    /// `bench/results/2026-11-28-h200-attention-scalar/`). Heads of 96 take 16: three slabs of
    /// 32 leave one subgroup of a row block two of a tile's four key blocks and the scalar
    /// passes four of a row's six lanes; six of 16 take at most one block each and give a row
    /// eight lanes (Phi-3.5, pp512 at depth 4096: attention 14.4 -> 13.5 ms a step; 48-key
    /// tiles for three slabs of 32 were 3% slower; `bench/results/2026-11-29-h200-variants/`).
    fn slab_for(head_dim: u32) -> u32 {
        match head_dim {
            96 => 16,
            ..=128 => 32,
            _ if head_dim.is_multiple_of(64) => 64,
            _ => 32,
        }
    }

    fn subgroups(self) -> u32 {
        (self.rows / 16) * (self.head_dim / self.slab)
    }

    /// Lanes that share out a query row's keys, four at a time: the largest power of two up to
    /// threads / rows and a tile's keys / 4.
    fn row_lanes(self) -> u32 {
        let per_row = (32 * self.subgroups() / self.rows).min(self.keys / 4);
        1 << per_row.ilog2()
    }

    /// Values a row of scores is padded by: a quarter-subgroup's eight threads read 16 bytes
    /// each from 8 / row_lanes rows, which fall on different banks where the rows start
    /// 4 · row_lanes values apart modulo the 32 banks (at least 4, for the tensor cores' stores).
    fn score_pad(self) -> u32 {
        match (4 * self.row_lanes() + 32 - self.keys % 32) % 32 {
            0 => 4,
            pad => pad,
        }
    }

    /// f32 values of the scores array: a tile's scores (rows padded by `score_pad`), or an
    /// output fragment per subgroup at the end, whichever is more.
    fn scores_len(self) -> u32 {
        (self.rows * (self.keys + self.score_pad())).max(self.subgroups() * 256)
    }

    /// Shared memory the kernel declares: the f16 query tile (unless in registers) and key or
    /// value tile (rows padded by 16 bytes), the scores, the tile's f16 weights (rows padded by 16 bytes), a max and a
    /// sum per row.
    pub fn shared_bytes(self) -> u32 {
        let query_tile = if self.query_registers { 0 } else { self.rows * (self.head_dim + 8) * 2 };
        query_tile
            + self.keys * (self.head_dim + 8) * 2
            + self.scores_len() * 4
            + self.rows * (self.keys + 8) * 2
            + self.rows * 8
    }

    /// The kernel's defines, its blocks' keys split as `splits` says.
    pub fn defines(self, splits: KeySplits) -> Vec<Define> {
        let mut defines = vec![
            Define::flag("F16"),
            Define::flag("COOPERATIVE_MATRIX"),
            Define::u32("HEAD_DIM", self.head_dim),
            Define::u32("BR", self.rows),
            Define::u32("BC", self.keys),
            Define::u32("SLAB", self.slab),
            Define::u32("SCORES_LEN", self.scores_len()),
            Define::u32("WG", 32 * self.subgroups()),
            Define::u32("ROW_LANES", self.row_lanes()),
            Define::u32("SCORE_PAD", self.score_pad()),
            Define::u32("N_SPLITS", splits.most),
        ];
        defines.extend(splits.defines());
        if self.slab >= 32 {
            defines.push(Define::flag("SLAB_FRAGMENTS_2"));
        }
        if self.slab == 64 {
            defines.push(Define::flag("SLAB_FRAGMENTS_4"));
        }
        if self.query_registers {
            defines.push(Define::flag("QUERY_REGISTERS"));
            // Fragments of 16 dimensions: 4, 6, 8 or 16.
            if self.head_dim >= 96 {
                defines.push(Define::flag("QUERY_FRAGMENTS_6"));
            }
            if self.head_dim >= 128 {
                defines.push(Define::flag("QUERY_FRAGMENTS_8"));
            }
            if self.head_dim == 256 {
                defines.push(Define::flag("QUERY_FRAGMENTS_16"));
            }
        }
        if splits.most > 1 {
            defines.push(Define::flag("KEY_SPLITS"));
        }
        defines
    }

    /// The merge of the key splits of this tile's blocks (`split_combine` with PREFILL): a
    /// thread per value column and split, up to 256, for each (token, head) row.
    pub(super) fn merge_defines(self, splits: KeySplits) -> Vec<Define> {
        let threads = (self.head_dim / 4 * splits.most).next_multiple_of(32).min(256);
        let mut defines = merge_defines(self.head_dim, splits.most, threads).to_vec();
        defines.extend([Define::flag("PREFILL"), Define::u32("BR", self.rows), Define::u32("BC", self.keys)]);
        defines.extend(splits.defines());
        defines
    }
}

/// How the tensor-core prefill attention splits its blocks' keys (`flash_splits.wgsl`): a step
/// of fewer blocks × heads than `below_workgroups` has each block dispatched about
/// `target_workgroups` over as workgroups, at most `most`, of which as many take a share of its
/// keys as give each at least `min_tiles` tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySplits {
    below_workgroups: u32,
    target_workgroups: u32,
    most: u32,
    min_tiles: u32,
}

impl KeySplits {
    /// Never split.
    pub const NONE: KeySplits =
        KeySplits { below_workgroups: 0, target_workgroups: 0, most: 1, min_tiles: 1 };

    /// Measured on an H200 at depth 4096 (`bench/results/2026-11-27-h200-flash-split/`): steps of
    /// 64 tokens (16-32 workgroups whole) prefilled 11-42% faster split towards 256 workgroups,
    /// 128 tokens (32-64) 4-17%. Steps of 128 workgroups and more (512 tokens, 8 heads and up)
    /// ran up to 9% slower split towards 256-2,048 workgroups, so they stay whole. 64-token
    /// steps split towards 128 workgroups ran within 3% of 256, towards 512 up to 6% slower.
    pub const CHOSEN: KeySplits =
        KeySplits { below_workgroups: 128, target_workgroups: 256, most: 16, min_tiles: 8 };

    /// Workgroups each of a step's `blocks` blocks of `n_heads` heads is dispatched: as
    /// `work_splits` in flash_splits.wgsl.
    fn per_block(self, blocks: u32, n_heads: u32) -> u32 {
        let workgroups = blocks * n_heads;
        match workgroups < self.below_workgroups {
            true => (self.target_workgroups / workgroups.max(1)).clamp(1, self.most),
            false => 1,
        }
    }

    fn defines(self) -> [Define; 3] {
        [
            Define::u32("SPLIT_BELOW_WORKGROUPS", self.below_workgroups),
            Define::u32("TARGET_WORKGROUPS", self.target_workgroups),
            Define::u32("MIN_SPLIT_TILES", self.min_tiles),
        ]
    }
}

/// The partials of the tensor-core prefill attention's key splits, which `split_combine`
/// merges: one pair of buffers for every layer of a session, sized for its largest step.
pub struct FlashPartials {
    values: wgpu::Buffer,
    stats: wgpu::Buffer,
    max_tokens: u32,
    n_heads: u32,
    head_dim: u32,
}

impl FlashPartials {
    /// Partials (a row of values and its stats per token, head and split) that steps of up to
    /// `max_tokens` tokens of `n_heads` heads of `head_dim` can leave: the most over the steps'
    /// block counts, the longest step of each (0 where none splits).
    fn rows(max_tokens: u32, n_heads: u32, head_dim: u32) -> u64 {
        let (splits, block_rows) = (KeySplits::CHOSEN, FlashTile::rows_for(head_dim));
        (1..=max_tokens.div_ceil(block_rows))
            .map(|blocks| match splits.per_block(blocks, n_heads) {
                1 => 0,
                per_block => {
                    let tokens = (blocks * block_rows).min(max_tokens);
                    u64::from(tokens) * u64::from(n_heads) * u64::from(per_block)
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// Bytes of the values and the (max, sum) stats, where some step splits and the values fit
    /// one binding of `max_storage_binding` bytes.
    fn buffer_sizes(
        max_tokens: u32,
        n_heads: u32,
        head_dim: u32,
        max_storage_binding: u64,
    ) -> Option<(u64, u64)> {
        let rows = Self::rows(max_tokens, n_heads, head_dim);
        let values = rows * u64::from(head_dim) * 4;
        (rows > 0 && values <= max_storage_binding).then_some((values, rows * 8))
    }

    /// Bytes a session of steps up to `max_tokens` keeps for them (0 where none would split).
    pub fn bytes(max_tokens: u32, n_heads: u32, head_dim: u32, max_storage_binding: u64) -> u64 {
        Self::buffer_sizes(max_tokens, n_heads, head_dim, max_storage_binding)
            .map_or(0, |(values, stats)| values + stats)
    }

    /// None where no step would split.
    pub fn new(ctx: &GpuContext, max_tokens: u32, n_heads: u32, head_dim: u32) -> Option<FlashPartials> {
        let (values, stats) =
            Self::buffer_sizes(max_tokens, n_heads, head_dim, ctx.caps.max_storage_binding)?;
        Some(FlashPartials {
            values: ctx.zeroed_storage("flash attention split values", values),
            stats: ctx.zeroed_storage("flash attention split stats", stats),
            max_tokens,
            n_heads,
            head_dim,
        })
    }

    pub fn size_bytes(&self) -> u64 {
        self.values.size() + self.stats.size()
    }

    /// Itself where it holds `layer`'s output rows of `n_heads` heads.
    fn check(&self, layer: &AttentionLayer, n_heads: u32) -> Result<&Self, KernelError> {
        let fits = self.n_heads == n_heads
            && self.head_dim == layer.cache.head_dim
            && layer.output.rows() <= self.max_tokens;
        match fits {
            true => Ok(self),
            false => Err(KernelError::InvalidShape {
                kernel: "attention",
                message: format!(
                    "key split partials for {} tokens of {} heads of {} do not hold output {}",
                    self.max_tokens,
                    self.n_heads,
                    self.head_dim,
                    layer.output.describe()
                ),
            }),
        }
    }
}

/// Queries (consecutive tokens of one head) per workgroup of the prefill block kernel: each
/// key and value it reads serves all of them.
const QUERIES_PER_BLOCK: u32 = 4;
/// Threads of the block kernel, one key each per tile: enough workgroups of them keep a
/// large GPU busy although each serves several queries.
const BLOCK_WORKGROUP_SIZE: u32 = 256;

/// The block kernel's threads, fewer on a CPU adapter: there a workgroup's threads run as a few
/// SIMD lanes, and a 256-key tile, mostly keys past a short step's queries, costs as much as a
/// full one. lavapipe, 128-token steps (`doppler bench --profile`): attention 7.0 → 4.2 s a
/// step for SmolLM2 135M (heads of 64) at depth 384, 4.0 → 2.3 s for Gemma 3 270M (256) at 256.
fn block_workgroup_size(caps: &GpuCapabilities) -> u32 {
    if caps.cpu_adapter {
        CPU_BLOCK_WORKGROUP_SIZE
    } else {
        BLOCK_WORKGROUP_SIZE
    }
}

const CPU_BLOCK_WORKGROUP_SIZE: u32 = 64;

/// Errors unless `queries` and the layer's output are rows of whole heads of the cache's size,
/// a multiple of its kv heads; returns the query heads.
pub(super) fn check_heads(queries: &GpuTensor, layer: &AttentionLayer) -> Result<u32, KernelError> {
    let cache = layer.cache;
    if cache.head_dim == 0 || queries.width() == 0 || !queries.width().is_multiple_of(cache.head_dim) {
        return Err(KernelError::InvalidShape {
            kernel: "attention",
            message: format!("queries {} are not heads of {} values", queries.describe(), cache.head_dim),
        });
    }
    check_width("attention", "queries", queries, queries.width())?;
    check_width("attention", "output", layer.output, queries.width())?;
    check_same_rows("attention", ("queries", queries), ("output", layer.output))?;
    let n_heads = queries.width() / cache.head_dim;
    if !n_heads.is_multiple_of(cache.n_kv_heads) {
        return Err(KernelError::InvalidShape {
            kernel: "attention",
            message: format!("{n_heads} query heads are not a multiple of {} kv heads", cache.n_kv_heads),
        });
    }
    if !cache.head_dim.is_multiple_of(4) {
        return Err(KernelError::InvalidShape {
            kernel: "attention",
            message: format!("head dimension {} is not a multiple of 4", cache.head_dim),
        });
    }
    Ok(n_heads)
}

#[cfg(test)]
mod flash_tests {
    //! Lavapipe has no cooperative matrices, so the tensor-core prefill kernel only runs on
    //! adapters that have them (tests/kernels_transformer.rs checks it there against f64). Here
    //! naga parses, validates and translates it to SPIR-V for each head dimension, split or not,
    //! with the merge of its key splits, and the shared memory it declares is what
    //! `FlashTile::shared_bytes` budgets.
    use super::{FlashPartials, FlashTile, KeySplits};
    use crate::kernels::spirv_translation::{translate, workgroup_bytes};

    #[test]
    fn flash_attention_translates_to_spirv_for_each_head_dimension() {
        for head_dim in [64, 96, 128, 256] {
            let chosen = FlashTile::new(head_dim, 48 << 10).unwrap();
            assert!(chosen.query_registers);
            assert_eq!(chosen.slab, FlashTile::slab_for(head_dim));
            // The staged query tile too, where shared memory is short of the registers' tile.
            let staged = FlashTile::new(head_dim, 35 << 10).unwrap();
            assert!(!staged.query_registers);
            // Unsplit, and with its blocks' keys split (the merge's partials bound too).
            for (tile, splits) in [chosen, staged]
                .into_iter()
                .flat_map(|tile| [KeySplits::NONE, KeySplits::CHOSEN].map(|splits| (tile, splits)))
            {
                let declared =
                    workgroup_bytes(&translate("attention_flash.wgsl", &tile.defines(splits)), &[]);
                assert_eq!(declared, tile.shared_bytes(), "{tile:?}");
                assert!(declared <= 48 << 10, "{tile:?} declares {declared} bytes");
            }
            translate("attention_decode.wgsl", &chosen.merge_defines(KeySplits::CHOSEN));
        }
    }

    #[test]
    fn short_steps_split_and_the_partials_hold_the_most_any_step_leaves() {
        let splits = KeySplits::CHOSEN;
        // Llama 8B (blocks of 64 queries, 32 heads): steps of 256 tokens and more are
        // workgroups enough; 64 tokens split 8 ways, 128 tokens 4.
        assert_eq!(splits.per_block(8, 32), 1);
        assert_eq!(splits.per_block(4, 32), 1);
        assert_eq!(splits.per_block(1, 32), 8);
        assert_eq!(splits.per_block(2, 32), 4);
        // One head: the most.
        assert_eq!(splits.per_block(1, 1), splits.most);
        // Steps up to 512 tokens: 1 to 3 blocks split (8, 4, 2 ways), 1 and 2 leave the most.
        let rows = 64 * 32 * 8;
        assert_eq!(FlashPartials::rows(512, 32, 128), rows);
        assert_eq!(FlashPartials::bytes(512, 32, 128, 1 << 30), rows * (128 * 4 + 8));
        // Unless the values would pass the binding.
        assert_eq!(FlashPartials::bytes(512, 32, 128, rows * 128 * 4 - 4), 0);
        // Steps that never split keep none.
        assert_eq!(FlashPartials::bytes(512, 128, 128, 1 << 30), 0);
    }
}
