//! Products with weight matrices kept in their GGUF block layout: a matrix-vector kernel for
//! decode and a tiled matrix-matrix kernel for prefill. Both decode the blocks in registers
//! (`quant_formats.wgsl`), so there is no dequantization pass and no f32 copy of the weights.
//! A matrix split into chunks (larger than one storage binding) gets one dispatch per chunk.

use bytemuck::{Pod, Zeroable};

use std::ops::Range;

use super::{
    check_same_rows, check_width,
    elementwise::{record_gated_activation, record_sum_slices, Activation, KSlices},
    make_dispatch,
    matmul_half::{
        fuses_gated, record_half_gated, record_half_matmul, runs_on, HalfOperands,
        MIN_TOKENS as HALF_MIN_TOKENS,
    },
    KernelError,
};
use crate::{
    gguf::GgmlType,
    gpu::{
        grid, Define, Dispatch, Element, GpuCapabilities, GpuContext, GpuMatrix, GpuTensor, MatrixChunk,
        OpList, StackedMatrix, StepBuffer, WeightBytes, Workgroups,
    },
};

/// Weight types the matmul and embedding kernels decode: every type of the CPU reference.
pub use crate::quant::SUPPORTED_TYPES;

/// Threads and rows (1, 2 or 4, at most `max_rows`) of a matrix-vector workgroup over `w`:
/// its threads split the blocks of its rows between them, each reusing its slice of x for all
/// rows. Measured on an H100 (`benches/decode_matvec.rs`): 128 threads once a row has more
/// than 64 parts, even where some then idle (Gemma 3 1B's gate and up: 15.7 µs against 19.4
/// with 64 threads, two rounds for some), 32 for rows of at most 32 (H200, the wide Q8
/// product of Qwen2.5 1.5B's Q6_K lm head, 24 parts a row: 27.6 µs per 32,768 rows with the
/// word-wide kernel, 20.6 wide with 32 threads); fewer rows per workgroup for small matrices so they
/// still spread over every SM, except where each workgroup normalizes a long input (over
/// 1,024 values) itself: there four rows share one norm (1B q, k, v: 10.0 µs against 11.7
/// with one; the 270M's, 640 values wide, are faster with one). Matrices of 2,048-4,095 rows
/// take one row a workgroup, twice the workgroups of two (H200 tg128: Llama 3.2 1B +4%, Qwen3
/// 4B +1.2%, Llama 3.2 3B -0.5%), but for the table types, whose workgroups each fill a
/// table first (Llama 3.2 3B IQ4_XS -7% with one). Where the workgroup sums through subgroups
/// (the shared-memory tree takes a power of two), rows of 65-96 parts take 96 threads rather
/// than 128 with 32 idle (H200 tg128: Llama 3.2 3B +1.3%, Qwen3 4B +1.7%, Gemma 3 4B +2.2%).
///
/// A CPU adapter runs a workgroup's threads as a few SIMD lanes, and every workgroup and
/// barrier costs it far more than a thread does: 16 threads over four rows decode SmolLM2
/// 135M on lavapipe about 2.5× faster than these shapes (~170 against ~650 ms a token).
fn matvec_shape(
    w: &GpuMatrix,
    parts_per_row: u32,
    max_rows: u32,
    normed_input: bool,
    caps: &GpuCapabilities,
) -> (u32, u32) {
    if caps.cpu_adapter {
        return (CPU_MATVEC_THREADS, 4.min(max_rows));
    }
    let threads = match parts_per_row {
        65..=96 if caps.subgroups => 96,
        65.. => 128,
        33.. => 64,
        _ => 32,
    };
    let rows_per_workgroup = match w.rows {
        1024.. if normed_input && w.row_len > 1024 => 4,
        4096.. => 4,
        2048.. if looks_up_values(w.ggml_type) => 2,
        _ => 1,
    };
    (threads, rows_per_workgroup.min(max_rows))
}

const CPU_MATVEC_THREADS: u32 = 16;

/// Whether `ty`'s quants index a table of values (quant_value_table.wgsl). Their products
/// take two rows a workgroup where the others take one: a shared table's 256 entries, filled by
/// every workgroup, cost two rows half as much each; and IQ4_XS with the table in registers
/// (SHUFFLED_TABLE) still decoded faster with two (H200, Llama 3.2 3B all IQ4_XS, tg128 440
/// tok/s against 414 with one).
fn looks_up_values(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::IQ4_NL | GgmlType::IQ4_XS | GgmlType::MXFP4)
}

/// The lanes of each subgroup that hold `ty`'s value table in the products on a Q8 input
/// (SHUFFLED_TABLE of matmul_vector.wgsl), where the adapter's subgroups hold at least 8.
fn shuffled_table_lanes(ty: GgmlType, caps: &GpuCapabilities) -> Option<u32> {
    (ty == GgmlType::IQ4_XS && caps.subgroups && caps.subgroup_min_size >= 8)
        .then(|| caps.subgroup_min_size.min(16))
}

/// Parts per row of `w` in the matrix-vector kernel: each part is 16 values (quant_formats.wgsl).
fn parts_per_row(w: &GpuMatrix) -> u32 {
    w.row_len / 16
}

/// Parts per row of `w` in the wide kernel on a Q8 input (`WIDE_Q8` of matmul_vector.wgsl:
/// 16-byte loads of weights and input, 32 values a part for Q4_K, Q5_K and IQ4_XS, 64 for Q6_K), where its type
/// has one and its rows hold at least 16 such parts. H200, Llama 3.1 8B's products
/// (`benches/decode_matvec.rs`): gate+up 43.7 -> 28.3 µs, ffn_down Q6_K 37.1 -> 23.3, Q4_K
/// 26.2 -> 16.7; Llama 3.2 1B's Q6_K lm head (32 parts a row, 32 threads) 33.9 -> 23.9.
fn wide_parts_per_row(w: &GpuMatrix) -> Option<u32> {
    let values_per_part = match w.ggml_type {
        GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::IQ4_XS => 32,
        GgmlType::Q6_K => 64,
        _ => return None,
    };
    Some(w.row_len / values_per_part).filter(|&parts| parts >= 16)
}

/// Weight rows and tokens per workgroup of the tiled matmul, the K step of its tiles, its
/// threads, and how it multiplies the tiles.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileShape {
    pub rows: u32,
    pub tokens: u32,
    pub k: u32,
    pub threads: u32,
    pub multiply: TileMultiply,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TileMultiply {
    /// f32 FMAs, 4 rows × 4 tokens a thread.
    Fma,
    /// f32 FMAs, 4 rows × 16 tokens a thread, the activations shared through subgroup
    /// broadcasts among this many lanes (`BROADCAST_LANES` of matmul_tiled.wgsl).
    BroadcastFma(u32),
    /// f16 cooperative matrices (tensor cores), 32 × 32 a subgroup of 32.
    CooperativeMatrix,
}

/// On f32 FMAs every thread computes 4 rows × 4 tokens and the two tiles fill 16 KiB of
/// shared memory (the WebGPU minimum); 64 × 64 was the fastest of the shapes tried on an H100.
const FMA_TILE: TileShape =
    TileShape { rows: 64, tokens: 64, k: 32, threads: (64 / 4) * (64 / 4), multiply: TileMultiply::Fma };

/// Where a CPU adapter's subgroups are 8 lanes of a SIMD vector (llvmpipe on AVX2), the same
/// tiles with 16 tokens a thread and the activations broadcast across the subgroup: llvmpipe
/// loads shared memory one lane and one component at a time, and this takes a quarter of the
/// loads a FMA. SmolLM2 135M Q4_1 on lavapipe (`doppler bench --gen-tokens 1 --runs 1 --ctx
/// 256`): pp14 2.3 -> 5.1 tok/s, pp64 3.2 -> 9.5, pp128 ~3 -> 9.2.
const BROADCAST_LANES: u32 = 8;
const CPU_TILE: TileShape = TileShape {
    rows: 64,
    tokens: 64,
    k: 32,
    threads: (64 / 4) * (64 / 16),
    multiply: TileMultiply::BroadcastFma(BROADCAST_LANES),
};

/// On cooperative matrices every subgroup of 32 threads computes a 32 × 32 block. Measured on
/// an H100 (1B pp512): 128 × 128 tiles 15,081 tok/s, 64 × 128 14,400, 128 × 64 13,863,
/// 64 × 64 10,976 (f32 FMAs: 8,082); a K step of 64 was slower than 32.
fn cooperative_tile(rows: u32, tokens: u32) -> TileShape {
    TileShape {
        rows,
        tokens,
        k: 32,
        threads: 32 * (rows / 32) * (tokens / 32),
        multiply: TileMultiply::CooperativeMatrix,
    }
}

/// Shared memory the cooperative variant declares: both f16 tiles (rows padded by 8 values)
/// and one f32 16 × 16 fragment per subgroup.
fn cooperative_shared_bytes(tile: TileShape) -> u32 {
    (tile.rows + tile.tokens) * (tile.k + 8) * 2 + tile.threads / 32 * 16 * 16 * 4
}

fn tile_shape(caps: &GpuCapabilities) -> TileShape {
    if caps.cpu_adapter
        && caps.subgroups
        && (caps.subgroup_min_size, caps.subgroup_max_size) == (BROADCAST_LANES, BROADCAST_LANES)
    {
        return CPU_TILE;
    }
    if !caps.cooperative_matrix {
        return FMA_TILE;
    }
    let large = cooperative_tile(128, 128);
    if large.threads <= caps.max_workgroup_invocations
        && cooperative_shared_bytes(large) <= caps.max_workgroup_storage_bytes
    {
        large
    } else {
        cooperative_tile(64, 64)
    }
}

/// The tiled kernel splits K until a full batch launches about this many workgroups: a matrix
/// with few rows (k, v, attn_output, ffn_down) otherwise leaves most compute units idle while
/// each of its workgroups walks the whole row.
const TARGET_WORKGROUPS: u32 = 512;

/// Workgroups a prefill product aims for: on a CPU adapter, whose few cores each run a
/// workgroup at a time, splitting K only adds the merge (SmolLM2 135M pp64 on lavapipe ~40%
/// faster unsplit).
fn target_workgroups(caps: &GpuCapabilities) -> u32 {
    if caps.cpu_adapter {
        1
    } else {
        TARGET_WORKGROUPS
    }
}

/// Splits walk at least this many K tiles, and there are at most MAX_K_SPLITS of them.
const MIN_K_TILES_PER_SPLIT: u32 = 4;
pub const MAX_K_SPLITS: u32 = 8;

/// Values per block as the kernels walk a row: plain types (F32, F16, BF16) in blocks of 16.
fn kernel_block_len(ty: GgmlType) -> u32 {
    (ty.block_len() as u32).max(16)
}

/// The `TYPE_*` define selecting `w`'s section of `quant_formats.wgsl`, after checking the
/// kernels can walk its rows.
pub(crate) fn weight_type_define(kernel: &'static str, w: &GpuMatrix) -> Result<Define, KernelError> {
    let ty = w.ggml_type;
    if !SUPPORTED_TYPES.contains(&ty) {
        return Err(KernelError::UnsupportedType { kernel, ty: ty.name() });
    }
    let block_len = kernel_block_len(ty);
    if w.row_len == 0 || !w.row_len.is_multiple_of(block_len) {
        return Err(KernelError::InvalidShape {
            kernel,
            message: format!(
                "'{}': rows of {} {} values (need a positive multiple of {block_len})",
                w.name,
                w.row_len,
                ty.name()
            ),
        });
    }
    Ok(type_define(ty))
}

/// The `TYPE_*` define selecting `ty`'s section of `quant_formats.wgsl`.
pub(crate) fn type_define(ty: GgmlType) -> Define {
    Define::flag(&format!("TYPE_{}", ty.name()))
}

/// The dispatch label of chunk `index` of `w`.
pub(crate) fn chunk_label(label: &str, w: &GpuMatrix, index: usize) -> String {
    if w.chunks.len() == 1 {
        label.to_string()
    } else {
        format!("{label} [chunk {index}]")
    }
}

/// matmul_vector.wgsl's `Params`, which it takes as defines (`defines`): the products run
/// back to back in decode, and a uniform's load stood before every weight load of each.
#[derive(Clone, Copy)]
struct MatvecParams {
    rows: u32,
    blocks_per_row: u32,
    row_bytes: u32,
    output_offset: u32,
    second: u32,
    third: u32,
    eps: f32,
}

impl MatvecParams {
    /// `rows` rows of `w`, x and y from element 0, one part.
    fn new(w: &GpuMatrix, rows: u32) -> Self {
        let blocks_per_row = w.row_len / kernel_block_len(w.ggml_type);
        Self {
            rows,
            blocks_per_row,
            row_bytes: w.row_bytes as u32,
            output_offset: 0,
            second: rows,
            third: rows,
            eps: 0.0,
        }
    }

    /// The fields as the shader's P_* defines.
    fn defines(&self) -> [Define; 7] {
        [
            Define::u32("P_ROWS", self.rows),
            Define::u32("P_BLOCKS_PER_ROW", self.blocks_per_row),
            Define::u32("P_ROW_BYTES", self.row_bytes),
            Define::u32("P_OUTPUT_OFFSET", self.output_offset),
            Define::u32("P_SECOND", self.second),
            Define::u32("P_THIRD", self.third),
            Define::f32("P_EPS", self.eps),
        ]
    }
}

/// The input vector of a decode matrix-vector product.
#[derive(Clone, Copy)]
pub enum MatvecInput<'a> {
    /// A row of `row_len` values (the tensor's first).
    Vector(&'a GpuTensor),
    /// An RMSNorm each workgroup computes for itself (`NORMED_INPUT` of matmul_vector.wgsl).
    Normed(NormedInput<'a>),
    /// A row in Q8 form (`record_quantize_q8`), for the types of `takes_q8_input`.
    Q8(&'a Q8Vector),
}

/// A decode input in Q8 form (quantize_q8.wgsl): `len` values as signed bytes, four to a
/// word, and one scale per 32 values.
pub struct Q8Vector {
    pub len: u32,
    pub words: GpuTensor,
    pub scales: GpuTensor,
}

impl Q8Vector {
    /// Bytes of the Q8 form of `len` values.
    pub fn bytes(len: u32) -> u64 {
        u64::from(len) + u64::from(len.div_ceil(32)) * 4
    }

    pub fn new(ctx: &GpuContext, label: &str, len: u32) -> Self {
        Self {
            len,
            words: GpuTensor::zeroed(ctx, &format!("{label} q8 values"), 1, len / 4, Element::U32),
            scales: GpuTensor::zeroed(ctx, &format!("{label} q8 scales"), 1, len.div_ceil(32), Element::F32),
        }
    }
}

/// Whether the decode product of `ty` can take its input in Q8 form (it has `part_dot_q8`).
pub fn takes_q8_input(ty: GgmlType) -> bool {
    matches!(
        ty,
        GgmlType::Q4_0
            | GgmlType::Q4_1
            | GgmlType::Q5_0
            | GgmlType::Q5_1
            | GgmlType::Q8_0
            | GgmlType::Q4_K
            | GgmlType::Q5_K
            | GgmlType::Q6_K
            | GgmlType::IQ4_XS
    )
}

/// Records the Q8 form of the first row of `x` into `out`.
pub fn record_quantize_q8(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    x: &GpuTensor,
    out: &Q8Vector,
) -> Result<(), KernelError> {
    check_width("quantize q8", "input", x, out.len)?;
    if !out.len.is_multiple_of(32) {
        return Err(KernelError::InvalidShape {
            kernel: "quantize q8",
            message: format!("{} values are not whole blocks of 32", out.len),
        });
    }
    const THREADS: u32 = 64;
    let vec4s = out.len / 4;
    ops.push(make_dispatch(
        ctx,
        label,
        "quantize_q8.wgsl",
        "main",
        &[Define::u32("WG", THREADS), Define::u32("VEC4S", vec4s)],
        &[x.buffer(), out.words.buffer(), out.scales.buffer()],
        Workgroups::Fixed([vec4s.div_ceil(THREADS), 1, 1]),
    )?);
    Ok(())
}

/// `rmsnorm(h)·norm` as a matrix-vector input, where h is `source`, or with `residual` the
/// residual stream after `source` (a block's output) is added to it.
#[derive(Clone, Copy)]
pub struct NormedInput<'a> {
    pub source: &'a GpuTensor,
    pub norm: &'a GpuTensor,
    pub residual: Option<ResidualStream<'a>>,
    pub eps: f32,
}

/// The residual connection before a normed input: `stream_out = stream_in + source`, with
/// `source` first RMS-normed by `post_norm` where there is one (Gemma's post-norms).
#[derive(Clone, Copy)]
pub struct ResidualStream<'a> {
    pub stream_in: &'a GpuTensor,
    /// Another tensor than `stream_in` (other workgroups still read that one), or None where
    /// another product folding in the same norm writes the stream.
    pub stream_out: Option<&'a GpuTensor>,
    pub post_norm: Option<&'a GpuTensor>,
}

/// Whether a matrix-vector kernel can normalize its input of `row_len` values itself: the
/// row fits in shared memory beside the reductions, and the adapter binds the extra buffers
/// (up to 9 of them, with three outputs).
pub fn normed_input_fits(ctx: &GpuContext, row_len: u32) -> bool {
    const MAX_THREADS: u64 = 128;
    let shared_bytes = u64::from(row_len) * 4 + MAX_THREADS * (16 + 4);
    row_len.is_multiple_of(4)
        && shared_bytes <= u64::from(ctx.caps.max_workgroup_storage_bytes)
        && ctx.caps.max_storage_buffers_per_stage >= 9
}

/// Input values all workgroups together may normalize, beyond which repeating the norm in each
/// costs more than the dispatch it saves. H100: Gemma 3 270M's q/k/v (1,536 workgroups of 640
/// values) and gate/up (1,024) gained; the 1B's gate/up (3,456 of 1,152: 4.0 M) lost 3% of
/// decode speed; Llama 3.1 8B's q/k/v (1,536 of 4,096: 6.3 M) took 40 µs normed against
/// about 18 for the norm kernel and the plain product.
const MAX_NORMED_INPUT_VALUES: u64 = 1 << 20;

/// Whether the decode products of `stacks` (`gated`: one gated product), all of one input,
/// should each normalize that input themselves (`MatvecInput::Normed`) rather than read it from
/// a norm kernel's output.
pub fn normed_input_pays(ctx: &GpuContext, stacks: &[StackedMatrix], gated: bool) -> bool {
    let mut normalized_values = 0u64;
    for stack in stacks {
        let w = &stack.matrix;
        if !normed_input_fits(ctx, w.row_len) {
            return false;
        }
        let (output_rows, max_rows) = if gated { (stack.parts[0].rows, GATED_MAX_ROWS) } else { (w.rows, 4) };
        let rows_per_workgroup = matvec_shape(w, parts_per_row(w), max_rows, true, &ctx.caps).1;
        let workgroups = output_rows.div_ceil(rows_per_workgroup);
        normalized_values += u64::from(workgroups) * u64::from(w.row_len);
    }
    // On a CPU adapter the norm repeated in every workgroup is CPU time, not idle GPU threads
    // (lavapipe, Gemma 3 270M decode: 268 ms per token with the norm kernels apart, 460 fused).
    !ctx.caps.cpu_adapter && normalized_values <= MAX_NORMED_INPUT_VALUES
}

/// Output rows per gated workgroup: each takes two sums and a workgroup holds four.
const GATED_MAX_ROWS: u32 = 2;

/// One matrix-vector dispatch: which chunk of which matrix, its parameters, and its variant
/// (`max_rows_per_workgroup` bounds ROWS, `extra_defines` add to the type's).
struct MatvecChunk<'a> {
    w: &'a GpuMatrix,
    chunk: &'a MatrixChunk,
    params: MatvecParams,
    max_rows_per_workgroup: u32,
    extra_defines: &'a [Define],
    /// Added to the output rows (BIAS).
    bias: Option<&'a GpuTensor>,
}

/// Records `product` of `input`, row r into `outputs[i]` for the part of the rows it falls in
/// (see SPLIT_OUTPUT).
fn matvec_dispatch(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    product: MatvecChunk,
    input: MatvecInput,
    outputs: &[&GpuTensor],
) -> Result<(), KernelError> {
    let MatvecChunk { w, chunk, mut params, max_rows_per_workgroup, extra_defines, bias } = product;
    let type_define = weight_type_define("matvec", w)?;
    let wide_parts = match input {
        MatvecInput::Q8(_) => wide_parts_per_row(w),
        _ => None,
    };
    let (threads, rows_per_workgroup) = matvec_shape(
        w,
        wide_parts.unwrap_or_else(|| parts_per_row(w)),
        max_rows_per_workgroup,
        matches!(input, MatvecInput::Normed(_)),
        &ctx.caps,
    );
    let mut defines = vec![type_define, Define::u32("WG", threads), Define::u32("ROWS", rows_per_workgroup)];
    if ctx.caps.subgroups {
        defines.push(Define::flag("SUBGROUPS"));
    }
    defines.extend_from_slice(extra_defines);
    let source = match input {
        MatvecInput::Vector(tensor) => tensor,
        MatvecInput::Normed(normed) => {
            params.eps = normed.eps;
            normed.source
        }
        MatvecInput::Q8(q8) => &q8.words,
    };
    defines.extend(params.defines());
    let mut bound = vec![(0, &chunk.buffer), (1, source.buffer()), (2, outputs[0].buffer())];
    bound.extend(outputs[1..].iter().zip(4..).map(|(tensor, binding)| (binding, tensor.buffer())));
    if let MatvecInput::Q8(q8) = input {
        defines.push(Define::flag("Q8_INPUT"));
        bound.push((10, q8.scales.buffer()));
        if let Some(lanes) = shuffled_table_lanes(w.ggml_type, &ctx.caps) {
            defines.extend([Define::flag("SHUFFLED_TABLE"), Define::u32("TABLE_LANES", lanes)]);
        }
        if wide_parts.is_some() {
            defines.push(Define::flag("WIDE_Q8"));
            // Q6_K still reads its scales as words; the others read nothing else.
            if w.ggml_type == GgmlType::Q6_K {
                bound.push((11, &chunk.buffer));
            } else {
                bound[0].0 = 11;
            }
        }
    }
    if let Some(bias) = bias {
        defines.push(Define::flag("BIAS"));
        bound.push((12, bias.buffer()));
    }
    if let MatvecInput::Normed(normed) = input {
        defines.push(Define::flag("NORMED_INPUT"));
        defines.push(Define::u32("X_VEC4S", w.row_len / 4));
        bound.push((6, normed.norm.buffer()));
        if let Some(residual) = normed.residual {
            defines.push(Define::flag("RESIDUAL"));
            bound.push((7, residual.stream_in.buffer()));
            if let Some(stream_out) = residual.stream_out {
                defines.push(Define::flag("STREAM_OUT"));
                bound.push((8, stream_out.buffer()));
            }
            if let Some(post_norm) = residual.post_norm {
                defines.push(Define::flag("POST_NORM"));
                bound.push((9, post_norm.buffer()));
            }
        }
    }
    let pipeline = ctx.pipeline("matmul_vector.wgsl", "main", &defines)?;
    let bind_group = ctx.bind_group_numbered(label, &pipeline, &bound);
    let workgroups = Workgroups::Fixed(grid(
        params.rows.div_ceil(rows_per_workgroup),
        ctx.caps.max_workgroups_per_dimension,
    ));
    // Every row of the chunk: a gated product's gate and up rows both, where `params.rows`
    // counts its output rows.
    let weight_bytes = WeightBytes::Fixed(u64::from(chunk.rows) * w.row_bytes);
    ops.push(Dispatch {
        label: label.to_string().into(),
        pipeline,
        bind_group,
        workgroups,
        switch: None,
        weight_bytes: Some(weight_bytes),
    });
    Ok(())
}

/// Errors unless the input's tensors are rows of `w`'s length and, for a normed input, the
/// adapter can fuse it.
fn check_input(
    kernel: &'static str,
    ctx: &GpuContext,
    w: &GpuMatrix,
    input: MatvecInput,
) -> Result<(), KernelError> {
    let row_len = w.row_len;
    match input {
        MatvecInput::Vector(tensor) => check_width(kernel, "input", tensor, row_len),
        MatvecInput::Q8(q8) => {
            if q8.len != row_len || !takes_q8_input(w.ggml_type) {
                return Err(KernelError::InvalidShape {
                    kernel,
                    message: format!(
                        "'{}' ({}, rows of {row_len}) cannot take a Q8 input of {} values",
                        w.name,
                        w.ggml_type.name(),
                        q8.len
                    ),
                });
            }
            Ok(())
        }
        MatvecInput::Normed(normed) => {
            if !normed_input_fits(ctx, w.row_len) {
                return Err(KernelError::InvalidShape {
                    kernel,
                    message: format!(
                        "'{}': a normed input of {} values does not fit a workgroup",
                        w.name, w.row_len
                    ),
                });
            }
            check_width(kernel, "input", normed.source, row_len)?;
            check_width(kernel, "norm", normed.norm, row_len)?;
            if let Some(residual) = normed.residual {
                check_width(kernel, "residual stream", residual.stream_in, row_len)?;
                if let Some(post_norm) = residual.post_norm {
                    check_width(kernel, "post-norm", post_norm, row_len)?;
                }
                if let Some(stream_out) = residual.stream_out {
                    check_width(kernel, "residual stream", stream_out, row_len)?;
                    if std::ptr::eq(residual.stream_in, stream_out) {
                        return Err(KernelError::InvalidShape {
                            kernel,
                            message: format!(
                                "'{}': the residual stream is read and written in one buffer",
                                w.name
                            ),
                        });
                    }
                }
            }
            Ok(())
        }
    }
}

/// Errors unless `stack` is one chunk (its parts in one binding) with `parts` parts.
fn check_stack(kernel: &'static str, stack: &StackedMatrix, parts: Range<usize>) -> Result<(), KernelError> {
    if stack.matrix.chunks.len() != 1 || !parts.contains(&stack.parts.len()) {
        return Err(KernelError::InvalidShape {
            kernel,
            message: format!(
                "'{}': {} parts in {} chunks (need {parts:?} parts in one)",
                stack.matrix.name,
                stack.parts.len(),
                stack.matrix.chunks.len()
            ),
        });
    }
    Ok(())
}

/// Decode: `y[r] = Σ_k W[r,k]·x[k]` with x the first row of `input` (rows of `w.row_len`)
/// and y the first row of `output` (rows of `w.rows`).
pub fn record_matvec(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    w: &GpuMatrix,
    input: &GpuTensor,
    output: &GpuTensor,
) -> Result<(), KernelError> {
    record_matvec_of(ctx, ops, label, w, MatvecInput::Vector(input), output)
}

/// `record_matvec` of a plain or Q8 input (a normed input is for one-chunk stacks).
pub fn record_matvec_of(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    w: &GpuMatrix,
    input: MatvecInput,
    output: &GpuTensor,
) -> Result<(), KernelError> {
    const KERNEL: &str = "matvec";
    weight_type_define(KERNEL, w)?;
    check_input(KERNEL, ctx, w, input)?;
    check_width(KERNEL, "output", output, w.rows)?;
    for (index, chunk) in w.chunks.iter().enumerate() {
        let params = MatvecParams { output_offset: chunk.first_row, ..MatvecParams::new(w, chunk.rows) };
        let product =
            MatvecChunk { w, chunk, params, max_rows_per_workgroup: 4, extra_defines: &[], bias: None };
        matvec_dispatch(ctx, ops, &chunk_label(label, w, index), product, input, &[output])?;
    }
    Ok(())
}

/// Decode: the products of every part of `stack` with x in one dispatch, part i's rows into
/// the first row of `outputs[i]`, plus `bias` (a value per row of the stack) where given.
pub fn record_stacked_matvec(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    stack: &StackedMatrix,
    input: MatvecInput,
    outputs: &[&GpuTensor],
    bias: Option<&GpuTensor>,
) -> Result<(), KernelError> {
    const KERNEL: &str = "stacked matvec";
    check_stack(KERNEL, stack, 1..4)?;
    let w = &stack.matrix;
    if let Some(bias) = bias {
        check_width(KERNEL, "bias", bias, w.rows)?;
    }
    if outputs.len() != stack.parts.len() {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("'{}': {} outputs for {} parts", w.name, outputs.len(), stack.parts.len()),
        });
    }
    check_input(KERNEL, ctx, w, input)?;
    for (index, output) in outputs.iter().enumerate() {
        check_width(KERNEL, "output", output, stack.parts[index].rows)?;
    }
    let starts: Vec<u32> = (0..stack.parts.len()).map(|index| stack.part_rows(index).start).collect();
    let params = MatvecParams {
        second: starts.get(1).copied().unwrap_or(w.rows),
        third: starts.get(2).copied().unwrap_or(w.rows),
        ..MatvecParams::new(w, w.rows)
    };
    let flags: &[Define] = match outputs.len() {
        1 => &[],
        2 => &[Define::flag("SPLIT_OUTPUT")],
        _ => &[Define::flag("SPLIT_OUTPUT"), Define::flag("THIRD_OUTPUT")],
    };
    let product =
        MatvecChunk { w, chunk: &w.chunks[0], params, max_rows_per_workgroup: 4, extra_defines: flags, bias };
    matvec_dispatch(ctx, ops, label, product, input, outputs)
}

/// Decode: `y[r] = act(G[r]·x) · U[r]·x` for a stack of two equal parts G (gate) and U (up):
/// the gated feed-forward input in one dispatch.
pub fn record_gated_matvec(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    stack: &StackedMatrix,
    input: MatvecInput,
    output: &GpuTensor,
    activation: Activation,
) -> Result<(), KernelError> {
    const KERNEL: &str = "gated matvec";
    check_stack(KERNEL, stack, 2..3)?;
    let w = &stack.matrix;
    let rows = stack.parts[0].rows;
    if stack.parts[1].rows != rows {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("'{}': parts of {} and {} rows", w.name, rows, stack.parts[1].rows),
        });
    }
    check_input(KERNEL, ctx, w, input)?;
    check_width(KERNEL, "output", output, rows)?;
    // Gate rows first, up rows from `second` on.
    let params = MatvecParams::new(w, rows);
    let mut defines = vec![Define::flag("GATED")];
    if activation == Activation::GeluTanh {
        defines.push(Define::flag("GELU_TANH"));
    }
    let product = MatvecChunk {
        w,
        chunk: &w.chunks[0],
        params,
        max_rows_per_workgroup: GATED_MAX_ROWS,
        extra_defines: &defines,
        bias: None,
    };
    matvec_dispatch(ctx, ops, label, product, input, &[output])
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct MatmulParams {
    rows: u32,
    row_len: u32,
    row_bytes: u32,
    out_stride: u32,
    first_row: u32,
    row_tiles: u32,
    max_tokens: u32,
    weight_row0: u32,
    splits: u32,
    split_len: u32,
    split_stride: u32,
    _pad: u32,
}

#[cfg(test)]
#[test]
fn matmul_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(MatmulParams, "matmul_tiled.wgsl", "Params", { rows: u32, row_len: u32, row_bytes: u32, out_stride: u32, first_row: u32, row_tiles: u32, max_tokens: u32, weight_row0: u32, splits: u32, split_len: u32, split_stride: u32 });
}

/// The defines of matmul_tiled.wgsl for one weight type and tile.
fn tiled_defines(weight_type: Define, tile: TileShape) -> Vec<Define> {
    let mut defines = vec![
        weight_type,
        Define::u32("TILE_ROWS", tile.rows),
        Define::u32("TILE_TOKENS", tile.tokens),
        Define::u32("TILE_K", tile.k),
        Define::u32("WG", tile.threads),
    ];
    match tile.multiply {
        TileMultiply::Fma => {}
        TileMultiply::BroadcastFma(lanes) => defines.push(Define::u32("BROADCAST_LANES", lanes)),
        TileMultiply::CooperativeMatrix => {
            defines.extend([Define::flag("F16"), Define::flag("COOPERATIVE_MATRIX")])
        }
    }
    defines
}

/// K splits for a product of `rows` rows of `row_len` over up to `max_tokens` tokens in `tile`s:
/// enough for at least `target_workgroups` to launch (about a wave of the GPU), then more until
/// the last wave of that many is LAST_WAVE_FILL_PERCENT full, as far as K's tiles and the partial
/// sums' room (`scratch_floats`) allow; returns (splits, K values per split).
pub(crate) fn k_splits(
    tile: TileShape,
    target_workgroups: u32,
    (rows, row_len): (u32, u32),
    max_tokens: u32,
    scratch_floats: u64,
) -> (u32, u32) {
    let workgroups = rows.div_ceil(tile.rows) * max_tokens.div_ceil(tile.tokens);
    let k_tiles = row_len.div_ceil(tile.k);
    let fit = (scratch_floats / (u64::from(max_tokens) * u64::from(rows)).max(1)).min(u64::from(MAX_K_SPLITS))
        as u32;
    let least = target_workgroups.div_ceil(workgroups);
    let most = (k_tiles / MIN_K_TILES_PER_SPLIT).min(fit).max(1);
    let fills_last_wave = |splits: u32| {
        let (launched, wave) = (u64::from(workgroups * splits), u64::from(target_workgroups));
        launched * 100 >= LAST_WAVE_FILL_PERCENT * wave * launched.div_ceil(wave)
    };
    let wanted = (least..=most).find(|&splits| fills_last_wave(splits)).unwrap_or(least).min(most).max(1);
    let split_len = k_tiles.div_ceil(wanted) * tile.k;
    (row_len.div_ceil(split_len), split_len)
}

/// A batch whose last wave is fuller than this (percent) splits K no further. H200, f16
/// products (128 workgroups a wave), pp512: Qwen3 4B's and Gemma 3 4B's 2,560 rows took 3
/// splits instead of 2 (80 tiles: 240 workgroups, not 160 of which 32 ran alone), Phi-3.5's and
/// Llama 3.2 3B's 3,072 rows 4 instead of 2, Qwen2.5 1.5B's 1,536 5 instead of 3: Qwen3 4B at
/// depth 4096 +6%, Phi-3.5 +3.6%, Gemma 3 4B +6.6%, Qwen2.5 1.5B +13.7%, Llama 3.2 3B +2% and
/// -1.5% in two rounds (`bench/results/2026-11-29-h200-pairs/`).
const LAST_WAVE_FILL_PERCENT: u64 = 85;

#[cfg(test)]
#[test]
fn k_splits_fill_the_last_wave() {
    let tile =
        TileShape { rows: 128, tokens: 128, k: 64, threads: 256, multiply: TileMultiply::CooperativeMatrix };
    let splits = |rows, row_len, target| k_splits(tile, target, (rows, row_len), 512, u64::MAX).0;
    // 80 tiles: 2 splits reach 128 workgroups but leave 32 alone in a second wave; 3 fill it.
    assert_eq!(splits(2560, 4096, 128), 3);
    // 96 tiles: 2 and 3 splits leave a quarter of the last wave idle.
    assert_eq!(splits(3072, 3072, 128), 4);
    // 128 tiles fill a wave unsplit; Qwen2.5 7B's 112 take the 2 that reach 128.
    assert_eq!(splits(4096, 4096, 128), 1);
    assert_eq!(splits(3584, 3584, 128), 2);
    // At most one split per MIN_K_TILES_PER_SPLIT tiles of K, and none on a CPU adapter.
    assert_eq!(splits(2560, 512, 128), 2);
    assert_eq!(splits(2560, 4096, 1), 1);
}

/// Prefill: `Y[t,r] = Σ_k W[r,k]·X[t,k]` for each token t of the step, X rows of `w.row_len`,
/// Y rows of `w.rows`, both with a row for as many tokens.
pub fn record_matmul(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    w: &GpuMatrix,
    input: &GpuTensor,
    output: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let part = MatrixRows { matrix: w, rows: 0..w.rows };
    let output = ProductOutput { output, split_scratch: None, half_operands: None };
    record_matmul_rows(ctx, ops, label, part, input, output, step)
}

/// Some rows of a weight matrix: one part of a stacked matrix.
#[derive(Clone)]
pub struct MatrixRows<'a> {
    pub matrix: &'a GpuMatrix,
    pub rows: Range<u32>,
}

/// Where a prefill product goes: `output`, and with `split_scratch` (f32 values) K is split
/// over several workgroups where the rows alone would launch too few, their partial sums
/// kept there and added up by a second dispatch. With `half_operands`, on tensor cores, large
/// steps take the f16 product (`matmul_half`).
#[derive(Clone, Copy)]
pub struct ProductOutput<'a> {
    pub output: &'a GpuTensor,
    pub split_scratch: Option<&'a GpuTensor>,
    pub half_operands: Option<&'a HalfOperands>,
}

/// One of the products `record_matmul_parts` records.
#[derive(Clone)]
pub struct PartProduct<'a> {
    pub label: String,
    pub part: MatrixRows<'a>,
    pub output: ProductOutput<'a>,
}

/// As `record_matmul` over rows `part.rows` of the matrix only: Y rows of `part.rows.len()`.
pub fn record_matmul_rows(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    part: MatrixRows,
    input: &GpuTensor,
    output: ProductOutput,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    record_matmul_parts(ctx, ops, &[PartProduct { label: label.to_string(), part, output }], input, step)
}

/// `record_matmul_rows` for each of `products`, all of one input (the parts of stacked
/// matrices): where they take the f16 products, the input is converted once for all of them.
pub fn record_matmul_parts(
    ctx: &GpuContext,
    ops: &mut OpList,
    products: &[PartProduct],
    input: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let half_operands: Option<Vec<&HalfOperands>> = products
        .iter()
        .map(|p| p.output.half_operands.filter(|o| runs_on(&ctx.caps) && o.serve(p.part.matrix.row_len)))
        .collect();
    let mut tiled = OpList::new();
    for product in products {
        record_tiled_product(ctx, &mut tiled, product, input, step)?;
    }
    match half_operands.as_deref() {
        Some([operands, ..]) => {
            ops.extend(tiled.in_steps_of(0..HALF_MIN_TOKENS));
            let mut half = OpList::new();
            record_half_matmul(ctx, &mut half, products, input, operands, step)?;
            ops.extend(half.in_steps_of(HALF_MIN_TOKENS..u32::MAX));
        }
        _ => ops.extend(tiled),
    }
    Ok(())
}

/// Prefill's gated feed-forward input `gate.output = act(gate · input) · (up · input)`, `up`'s
/// output holding up · input on the way: where the products run on f16 operands, in one
/// product that applies the activation as it stores (`matmul_half::record_half_gated`), else
/// two products and the activation (`label`).
pub fn record_gated_matmul(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    [gate, up]: &[PartProduct; 2],
    input: &GpuTensor,
    activation: Activation,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let (gate_out, up_out) = (gate.output.output, up.output.output);
    let fused =
        gate.output.half_operands.filter(|operands| runs_on(&ctx.caps) && fuses_gated(gate, up, operands));
    let Some(operands) = fused else {
        record_matmul_parts(ctx, ops, &[gate.clone(), up.clone()], input, step)?;
        return record_gated_activation(ctx, ops, label, gate_out, up_out, step, activation);
    };
    let tiled = [gate, up]
        .map(|p| PartProduct { output: ProductOutput { half_operands: None, ..p.output }, ..p.clone() });
    let mut unfused = OpList::new();
    record_matmul_parts(ctx, &mut unfused, &tiled, input, step)?;
    record_gated_activation(ctx, &mut unfused, label, gate_out, up_out, step, activation)?;
    ops.extend(unfused.in_steps_of(0..HALF_MIN_TOKENS));
    let mut half = OpList::new();
    let fused_label = joined_label(&[&gate.label, &up.label, label]);
    record_half_gated(ctx, &mut half, &fused_label, (gate, up), input, activation, operands, step)?;
    ops.extend(half.in_steps_of(HALF_MIN_TOKENS..u32::MAX));
    Ok(())
}

/// Dispatch labels joined by `+`, the layer prefix of the first (`blk.3.`) dropped from the
/// others: `blk.3.ffn_gate+ffn_up`, grouped per layer by the profiler like one label.
pub fn joined_label(labels: &[&str]) -> String {
    let Some(first) = labels.first() else {
        return String::new();
    };
    let prefix = first.rfind('.').map_or("", |dot| &first[..=dot]);
    let rest = labels[1..].iter().map(|label| label.strip_prefix(prefix).unwrap_or(label));
    std::iter::once(*first).chain(rest).collect::<Vec<_>>().join("+")
}

/// One product of `record_matmul_parts` on the tiled kernel.
fn record_tiled_product(
    ctx: &GpuContext,
    ops: &mut OpList,
    product: &PartProduct,
    input: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    const KERNEL: &str = "matmul";
    let tile = tile_shape(&ctx.caps);
    let PartProduct { label, part: MatrixRows { matrix: w, rows }, output } = product;
    let rows = rows.clone();
    let ProductOutput { output, split_scratch: scratch, .. } = *output;
    if rows.is_empty() || rows.end > w.rows {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("'{}': rows {rows:?} of {}", w.name, w.rows),
        });
    }
    let defines = tiled_defines(weight_type_define(KERNEL, w)?, tile);
    let out_stride = rows.len() as u32;
    check_width(KERNEL, "input", input, w.row_len)?;
    check_width(KERNEL, "output", output, out_stride)?;
    check_same_rows(KERNEL, ("input", input), ("output", output))?;
    let max_tokens = input.rows();
    let max_per_dimension = ctx.caps.max_workgroups_per_dimension;
    let scratch_floats = scratch.map_or(0, GpuTensor::len);
    let (splits, split_len) =
        k_splits(tile, target_workgroups(&ctx.caps), (out_stride, w.row_len), max_tokens, scratch_floats);
    let (target, split_stride) = match scratch {
        Some(scratch) if splits > 1 => (scratch, max_tokens * out_stride),
        _ => (output, 0),
    };
    for (index, chunk) in w.chunks.iter().enumerate() {
        // The chunk's rows that are in `rows`, as offsets within the chunk.
        let first = rows.start.max(chunk.first_row) - chunk.first_row;
        let end = rows.end.min(chunk.first_row + chunk.rows).saturating_sub(chunk.first_row);
        if first >= end {
            continue;
        }
        let label = chunk_label(label, w, index);
        let row_tiles = (end - first).div_ceil(tile.rows);
        let params = ctx.uniform_buffer(
            &label,
            &MatmulParams {
                rows: end - first,
                row_len: w.row_len,
                row_bytes: w.row_bytes as u32,
                out_stride,
                first_row: chunk.first_row + first - rows.start,
                row_tiles,
                max_tokens,
                weight_row0: first,
                splits,
                split_len,
                split_stride,
                _pad: 0,
            },
        );
        let workgroups = Workgroups::PerStep(Box::new(move |n_tokens| {
            grid(splits * row_tiles * n_tokens.min(max_tokens).div_ceil(tile.tokens), max_per_dimension)
        }));
        ops.push(
            make_dispatch(
                ctx,
                &label,
                "matmul_tiled.wgsl",
                "main",
                &defines,
                &[&chunk.buffer, input.buffer(), target.buffer(), step.buffer(), &params],
                workgroups,
            )?
            .reading(WeightBytes::Fixed(u64::from(end - first) * w.row_bytes)),
        );
    }
    if split_stride > 0 {
        let slices = KSlices { count: splits, stride: split_stride };
        record_sum_slices(ctx, ops, &format!("{label} (K splits)"), (target, slices), output, step)?;
    }
    Ok(())
}

#[cfg(test)]
mod cooperative_matrix_tests {
    //! Lavapipe has no cooperative matrices, so the tensor-core variant of the tiled kernel only
    //! runs on adapters that have them (tests/kernels_matmul.rs checks it there). Here naga at
    //! least parses, validates and translates it to SPIR-V for every weight type and tile, and
    //! the shared memory it declares is what `tile_shape` budgets.
    use super::*;
    use crate::{
        gpu::shader::expand,
        kernels::spirv_translation::{translate, workgroup_bytes},
    };

    #[test]
    fn cooperative_matrix_variant_translates_to_spirv_for_every_type() {
        for (ty, tile) in SUPPORTED_TYPES
            .into_iter()
            .flat_map(|ty| [(ty, cooperative_tile(128, 128)), (ty, cooperative_tile(64, 64))])
        {
            let defines = tiled_defines(type_define(ty), tile);
            let source = expand("matmul_tiled.wgsl", &defines).unwrap();
            assert!(source.starts_with("enable f16;\nenable wgpu_cooperative_matrix;\n"));
            // The table types' 64-byte value table (quant_value_table.wgsl) is not the tile's.
            let declared = workgroup_bytes(&translate("matmul_tiled.wgsl", &defines), &["value_table"]);
            assert_eq!(declared, cooperative_shared_bytes(tile), "{tile:?}");
        }
    }
}

#[cfg(test)]
mod weight_bytes_tests {
    //! What a profiled step reports each product read: the bytes of the weight rows its
    //! dispatch covers, chunk by chunk.
    use super::*;
    use crate::gpu::{Element, GpuOptions, KernelProfiler, KernelTiming};

    const ROW_LEN: u32 = 64;
    const ROWS: u32 = 40;
    const TOKENS: u32 = 3;

    fn profiled(ctx: &GpuContext, ops: &OpList) -> Vec<KernelTiming> {
        let profiler = KernelProfiler::new(ctx).expect("an adapter with timestamp queries");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        ops.encode(&mut encoder, TOKENS, Some(&profiler));
        ctx.queue.submit([encoder.finish()]);
        profiler.read(ctx).unwrap()
    }

    #[test]
    fn matrix_products_record_the_weight_bytes_of_their_rows() {
        let ctx = GpuContext::new(&GpuOptions { want_timestamps: true, ..GpuOptions::default() })
            .expect("a wgpu adapter");
        let weights: Vec<f32> = (0..ROWS * ROW_LEN).map(|i| (i % 13) as f32 / 13.0).collect();
        let row_bytes = u64::from(ROW_LEN) * 4;
        // 16 rows a chunk: chunks of 16, 16 and 8 rows.
        let w = GpuMatrix::upload_with_chunk_limit(
            &ctx,
            "w",
            GgmlType::F32,
            ROW_LEN.into(),
            ROWS.into(),
            bytemuck::cast_slice(&weights),
            16 * row_bytes,
        )
        .unwrap();
        assert_eq!(w.chunks.len(), 3);
        let input = GpuTensor::zeroed(&ctx, "x", TOKENS, ROW_LEN, Element::F32);
        let step = StepBuffer::new(&ctx);
        step.write(&ctx.queue, 0, TOKENS);
        let vector_out = GpuTensor::zeroed(&ctx, "y", 1, ROWS, Element::F32);
        let matrix_out = GpuTensor::zeroed(&ctx, "Y", TOKENS, ROWS, Element::F32);

        let mut ops = OpList::new();
        record_matvec(&ctx, &mut ops, "matvec", &w, &input, &vector_out).unwrap();
        let timings = profiled(&ctx, &ops);
        let bytes: Vec<Option<u64>> = timings.iter().map(|t| t.weight_bytes).collect();
        assert_eq!(bytes, [Some(16 * row_bytes), Some(16 * row_bytes), Some(8 * row_bytes)]);
        let traffic = crate::gpu::WeightTraffic::of(&timings);
        assert_eq!(traffic.bytes, w.size_bytes());
        let bandwidth = traffic.gigabytes_per_second().expect("timed dispatches");
        assert!(bandwidth.is_finite() && bandwidth > 0.0, "{bandwidth} GB/s");

        // Rows 10..30 of a prefill product: 6 of the first chunk, 14 of the second. The tiled
        // kernel reads its weight rows once whatever the tokens.
        let mut ops = OpList::new();
        let out = GpuTensor::zeroed(&ctx, "Y part", TOKENS, 20, Element::F32);
        let part = MatrixRows { matrix: &w, rows: 10..30 };
        let product = ProductOutput { output: &out, split_scratch: None, half_operands: None };
        record_matmul_rows(&ctx, &mut ops, "part", part, &input, product, &step).unwrap();
        record_matmul(&ctx, &mut ops, "matmul", &w, &input, &matrix_out, &step).unwrap();
        let bytes: Vec<(String, Option<u64>)> =
            profiled(&ctx, &ops).into_iter().map(|t| (t.label, t.weight_bytes)).collect();
        let expected = [
            ("part [chunk 0]", 6),
            ("part [chunk 1]", 14),
            ("matmul [chunk 0]", 16),
            ("matmul [chunk 1]", 16),
            ("matmul [chunk 2]", 8),
        ]
        .map(|(label, rows)| (label.to_string(), Some(rows * row_bytes)));
        assert_eq!(bytes, expected);
    }
}

#[cfg(test)]
mod real_tensor_tests {
    //! The matrix-vector and tiled kernels on rows of every weight type found in the two
    //! default models, against the CPU reference: real scale and quant distributions rather
    //! than random blocks. Same tolerance as tests/kernels_matmul.rs:
    //! |gpu - ref| ≤ 1e-5 · Σ|w·x| + 1e-6.
    use super::*;
    use crate::{
        gguf::{
            test_models::{model_path, GEMMA, SMOLLM2},
            GgufFile,
        },
        gpu::{Element, GpuOptions},
        quant::dequantize_row,
    };

    /// Rows taken from each tensor: the first ones and the last ones.
    const ROWS_FROM_EACH_END: usize = 70;
    const TOKENS: usize = 5;

    fn check_tensor(ctx: &GpuContext, file: &GgufFile, name: &str) {
        let info = file.tensor(name).unwrap();
        let (row_len, rows) = (info.row_len() as usize, info.rows() as usize);
        let row_bytes = info.row_bytes() as usize;
        let data = file.tensor_data(info);
        let picked: Vec<usize> =
            (0..ROWS_FROM_EACH_END.min(rows)).chain(rows.saturating_sub(ROWS_FROM_EACH_END)..rows).collect();
        let bytes: Vec<u8> =
            picked.iter().flat_map(|&r| &data[r * row_bytes..(r + 1) * row_bytes]).copied().collect();
        let mut weights = vec![0.0f32; picked.len() * row_len];
        dequantize_row(info.ggml_type, &bytes, &mut weights).unwrap();
        let w = GpuMatrix::upload(ctx, name, info.ggml_type, row_len as u64, picked.len() as u64, &bytes)
            .unwrap();

        // Activations like a normed hidden state: mostly small, a few large.
        let x: Vec<f32> = (0..TOKENS * row_len)
            .map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * if i % 97 == 0 { 20.0 } else { 1.0 })
            .collect();
        let input = GpuTensor::from_f32(ctx, "x", row_len as u32, &x);
        let step = StepBuffer::new(ctx);
        step.write(&ctx.queue, 0, TOKENS as u32);
        let vector_out = GpuTensor::zeroed(ctx, "y", 1, picked.len() as u32, Element::F32);
        let matrix_out = GpuTensor::zeroed(ctx, "Y", TOKENS as u32, picked.len() as u32, Element::F32);
        let mut ops = OpList::new();
        record_matvec(ctx, &mut ops, name, &w, &input, &vector_out).unwrap();
        record_matmul(ctx, &mut ops, name, &w, &input, &matrix_out, &step).unwrap();
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        ops.encode(&mut encoder, TOKENS as u32, None);
        ctx.queue.submit([encoder.finish()]);
        let vector = ctx.read_f32(vector_out.buffer(), picked.len()).unwrap();
        let matrix = ctx.read_f32(matrix_out.buffer(), TOKENS * picked.len()).unwrap();

        for t in 0..TOKENS {
            for (i, row) in weights.chunks(row_len).enumerate() {
                let (sum, magnitude) =
                    row.iter().zip(&x[t * row_len..]).fold((0.0f64, 0.0f64), |(s, m), (&w, &x)| {
                        let term = f64::from(w) * f64::from(x);
                        (s + term, m + term.abs())
                    });
                let tolerance = 1e-5 * magnitude + 1e-6;
                let got = matrix[t * picked.len() + i];
                assert!(
                    (f64::from(got) - sum).abs() <= tolerance,
                    "{name} ({}) matmul token {t} row {}: got {got}, expected {sum}",
                    info.ggml_type,
                    picked[i]
                );
                if t == 0 {
                    let got = vector[i];
                    assert!(
                        (f64::from(got) - sum).abs() <= tolerance,
                        "{name} ({}) matvec row {}: got {got}, expected {sum}",
                        info.ggml_type,
                        picked[i]
                    );
                }
            }
        }
    }

    #[test]
    fn kernels_match_reference_on_every_weight_type_of_the_default_models() {
        let ctx = GpuContext::new(&GpuOptions::default()).expect("a wgpu adapter");
        for model in [GEMMA, SMOLLM2] {
            let Some(path) = model_path(model) else { return };
            let file = GgufFile::open(&path).unwrap();
            let mut seen = Vec::new();
            for info in file.tensors() {
                if info.dims.len() == 2
                    && !seen.contains(&info.ggml_type)
                    && SUPPORTED_TYPES.contains(&info.ggml_type)
                {
                    seen.push(info.ggml_type);
                    check_tensor(&ctx, &file, &info.name);
                }
            }
            assert!(seen.len() >= 2, "{model}: expected several weight types, found {seen:?}");
        }
    }
}
