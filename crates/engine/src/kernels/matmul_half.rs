//! Prefill products on the tensor cores from f16 operands: the weight rows are dequantized to
//! f16 a slice at a time (`dequantize_half.wgsl`), the step's activations converted once for
//! the products of one input (`convert_half.wgsl`), and `matmul_half.wgsl` multiplies them
//! (the gated feed-forward input's gate and up in one product, a layer's q, k and v in one),
//! staging 16-byte loads through shared memory. The tiled kernel (`matmul_tiled.wgsl`)
//! decodes every weight once per tile of tokens into shared memory, which held it far below
//! the tensor cores' rate; here each weight is decoded once per step and the product is left
//! nothing but loads and multiplies. The dequantization costs about a weight read and an f16
//! write and read, which a large step amortizes: steps of fewer than `MIN_TOKENS` tokens take
//! the tiled kernel.

use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use super::{
    check_width,
    elementwise::{record_sum_slices, Activation, KSlices},
    make_dispatch,
    matmul::{
        chunk_label, joined_label, k_splits, weight_type_define, MatrixRows, PartProduct, ProductOutput,
        TileMultiply, TileShape,
    },
    KernelError,
};
use crate::gpu::{
    grid, Define, Dispatch, Element, GpuCapabilities, GpuContext, GpuMatrix, GpuTensor, MatrixChunk, OpList,
    StepBuffer, WeightBytes, Workgroups,
};

/// Fewest tokens of a step for which these products beat the tiled kernel's. Measured on an
/// H200: at 128 tokens the tiled kernel was still ahead on Llama 1B (1.17×) and Gemma 4B
/// (1.03×), behind on Llama 8B (0.86×); at 192 behind on all three (0.64–0.85×).
pub const MIN_TOKENS: u32 = 160;

/// Tokens and weight rows per workgroup: eight subgroups, each 32 tokens × 64 rows.
const TILE_TOKENS: u32 = 128;
const TILE_ROWS: u32 = 128;
const THREADS: u32 = 32 * (TILE_TOKENS / 32) * (TILE_ROWS / 64);
/// Values per K step of the product: 64 rather than 32 halves the barriers per value (H200,
/// pp512: Llama 3.1 8B 6,252 → 8,007 tok/s, Gemma 3 4B 9,393 → 11,139).
const TILE_K: u32 = 64;
const PRODUCT_TILE: TileShape = TileShape {
    rows: TILE_ROWS,
    tokens: TILE_TOKENS,
    k: TILE_K,
    threads: THREADS,
    multiply: TileMultiply::CooperativeMatrix,
};
// Each thread copies the same whole number of 16-byte pieces of each tile per K step.
const _: () = assert!(TILE_ROWS == TILE_TOKENS && (TILE_ROWS * TILE_K / 8).is_multiple_of(THREADS));

/// Most bytes of f16 weights dequantized at a time: the gate and up rows of the 7-8B shapes
/// (Qwen2.5 7B's 272 MB the largest; one product a matrix fills the GPU best: slices of
/// 32 MiB left its products a workgroup or less per SM), slices of larger ones.
const MAX_WEIGHT_SLICE_BYTES: u64 = 288 << 20;

/// The product splits K until a full batch launches about this many workgroups, about one per
/// SM of an H100 or H200: there 256 beat 512 by 2-15%, and once the conversions were cheaper
/// 128 beat 256 (pp512: Llama 8B +4-8%, Llama 1B and Qwen2.5 7B +1-2%; the sums of the splits
/// cost more than the workgroups they add win), and on until the last wave of 128 is nearly
/// full (`k_splits`).
const TARGET_WORKGROUPS: u32 = 128;

/// Shared memory of a workgroup: both tiles (rows padded by 8 values) and one f32 16 × 16
/// fragment per subgroup.
const SHARED_BYTES: u32 = (TILE_ROWS + TILE_TOKENS) * (TILE_K + 8) * 2 + THREADS / 32 * 16 * 16 * 4;

/// Whether the products run on an adapter of `caps`: tensor cores, and room for a workgroup.
pub fn runs_on(caps: &GpuCapabilities) -> bool {
    caps.cooperative_matrix
        && THREADS <= caps.max_workgroup_invocations
        && SHARED_BYTES <= caps.max_workgroup_storage_bytes
}

/// Threads per workgroup of the dequantization and conversion kernels.
const CONVERT_THREADS: u32 = 256;
/// Values each thread of the dequantization writes (dequantize_half.wgsl).
const DEQUANTIZED_PER_THREAD: u32 = 8;

/// The shapes the f16 operands must serve: the widest input row of the products, and the
/// values of their largest product (the stacked q, k and v, or the gated product's gate and
/// up rows).
#[derive(Debug, Clone, Copy)]
pub struct HalfShape {
    pub max_row_len: u32,
    pub max_matrix_values: u64,
}

/// Weights of a model's largest product below which its prefill keeps the tiled kernel: on an
/// H200 (`bench/results/2026-11-27-h200-half-prefill/run3.log`) Gemma 3 270M, whose gate and
/// up hold 2.6M weights, prefilled 512 tokens 2–13% slower with these products; Gemma 3 1B
/// (15.9M) 20–28% faster, Llama 3.2 1B (33.6M) 51–54%.
const MIN_MATRIX_VALUES: u64 = 1 << 22;

impl HalfShape {
    /// Whether the products pay for their conversions in models of this shape.
    pub fn pays_off(self) -> bool {
        self.max_matrix_values >= MIN_MATRIX_VALUES
    }
}

/// The f16 operands of the products: the step's input rows and a slice of a weight matrix.
pub struct HalfOperands {
    /// Rows of every token a step can hold (padded to whole tiles), `max_row_len` wide.
    input: GpuTensor,
    weights: GpuTensor,
    max_row_len: u32,
}

impl HalfOperands {
    /// Bytes of the operands of products of `shape` over `max_tokens` tokens, within
    /// bindings of `max_storage_binding` bytes.
    pub fn bytes(max_tokens: u32, shape: HalfShape, max_storage_binding: u64) -> u64 {
        Self::input_bytes(max_tokens, shape.max_row_len) + Self::weight_bytes(shape, max_storage_binding)
    }

    fn input_bytes(max_tokens: u32, max_row_len: u32) -> u64 {
        u64::from(max_tokens.next_multiple_of(TILE_TOKENS)) * u64::from(max_row_len) * 2
    }

    /// A whole matrix (in whole tiles of rows) where it fits the limits.
    fn weight_bytes(shape: HalfShape, max_storage_binding: u64) -> u64 {
        let matrix = (shape.max_matrix_values + u64::from(TILE_ROWS * shape.max_row_len)) * 2;
        matrix.min(MAX_WEIGHT_SLICE_BYTES).min(max_storage_binding & !3)
    }

    pub fn new(ctx: &GpuContext, max_tokens: u32, shape: HalfShape) -> Self {
        Self::with_slice_bytes(ctx, max_tokens, shape, MAX_WEIGHT_SLICE_BYTES)
    }

    /// As `new` with weight slices of at most `slice_bytes` (tests: many slices on small
    /// matrices).
    pub fn with_slice_bytes(ctx: &GpuContext, max_tokens: u32, shape: HalfShape, slice_bytes: u64) -> Self {
        let max_row_len = shape.max_row_len;
        let words = |bytes: u64| u32::try_from(bytes / 4).expect("operand words fit in u32");
        let input_words = words(Self::input_bytes(max_tokens, max_row_len));
        let weight_words = words(Self::weight_bytes(shape, ctx.caps.max_storage_binding).min(slice_bytes));
        Self {
            input: GpuTensor::zeroed(ctx, "f16 product input", 1, input_words, Element::U32),
            weights: GpuTensor::zeroed(ctx, "f16 product weights", 1, weight_words, Element::U32),
            max_row_len,
        }
    }

    pub fn size_bytes(&self) -> u64 {
        self.input.size_bytes() + self.weights.size_bytes()
    }

    /// Weight rows of `row_len` values one slice holds, in whole tiles (0 where none fits).
    fn slice_rows(&self, row_len: u32) -> u32 {
        let rows = self.weights.size_bytes() / (u64::from(row_len) * 2);
        (rows.min(u64::from(u32::MAX)) as u32) / TILE_ROWS * TILE_ROWS
    }

    /// Whether these operands can serve a product over rows of `row_len` values.
    pub fn serve(&self, row_len: u32) -> bool {
        row_len <= self.max_row_len && row_len.is_multiple_of(TILE_K) && self.slice_rows(row_len) > 0
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct DequantizeParams {
    rows: u32,
    weight_row0: u32,
    pair_offset: u32,
    out_row0: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ConvertParams {
    row_len: u32,
    max_tokens: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ProductParams {
    rows: u32,
    row_len: u32,
    out_stride: u32,
    first_row: u32,
    row_tiles: u32,
    max_tokens: u32,
    splits: u32,
    split_len: u32,
    split_stride: u32,
    part1_row: u32,
    part2_row: u32,
    _pad: u32,
}

impl ProductParams {
    /// A product of `rows` rows of `row_len` values into an output as wide, K not split.
    fn unsplit(rows: u32, row_len: u32, max_tokens: u32) -> Self {
        Self {
            rows,
            row_len,
            out_stride: rows,
            first_row: 0,
            row_tiles: rows.div_ceil(TILE_ROWS),
            max_tokens,
            splits: 1,
            split_len: row_len,
            split_stride: 0,
            part1_row: 0,
            part2_row: 0,
            _pad: 0,
        }
    }
}

/// The product of `params` (matmul_half.wgsl with `defines`) on the converted input and f16
/// weights of `operands`, writing `outputs` (y, then STACKED's y1 and y2).
fn product_dispatch(
    ctx: &GpuContext,
    label: &str,
    defines: &[Define],
    params: ProductParams,
    (operands, outputs): (&HalfOperands, &[&GpuTensor]),
    step: &StepBuffer,
) -> Result<Dispatch, KernelError> {
    let uniform = ctx.uniform_buffer(label, &params);
    let mut buffers = vec![operands.weights.buffer(), operands.input.buffer()];
    buffers.extend(outputs.first().map(|output| output.buffer()));
    buffers.extend([step.buffer(), &uniform]);
    buffers.extend(outputs.iter().skip(1).map(|output| output.buffer()));
    let ProductParams { splits, row_tiles, max_tokens, .. } = params;
    let max_per_dimension = ctx.caps.max_workgroups_per_dimension;
    make_dispatch(
        ctx,
        label,
        "matmul_half.wgsl",
        "main",
        defines,
        &buffers,
        Workgroups::PerStep(Box::new(move |n_tokens| {
            grid(splits * row_tiles * n_tokens.min(max_tokens).div_ceil(TILE_TOKENS), max_per_dimension)
        })),
    )
}

#[cfg(test)]
#[test]
fn params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(DequantizeParams, "dequantize_half.wgsl", "Params", { rows: u32, weight_row0: u32, pair_offset: u32, out_row0: u32 });
    super::wgsl_layout::assert_wgsl_layout!(ConvertParams, "convert_half.wgsl", "Params", { row_len: u32, max_tokens: u32 });
    super::wgsl_layout::assert_wgsl_layout!(ProductParams, "matmul_half.wgsl", "Params", { rows: u32, row_len: u32, out_stride: u32, first_row: u32, row_tiles: u32, max_tokens: u32, splits: u32, split_len: u32, split_stride: u32, part1_row: u32, part2_row: u32 });
}

fn product_defines() -> [Define; 6] {
    [
        Define::u32("TILE_K", TILE_K),
        Define::flag("F16"),
        Define::flag("COOPERATIVE_MATRIX"),
        Define::u32("TILE_TOKENS", TILE_TOKENS),
        Define::u32("TILE_ROWS", TILE_ROWS),
        Define::u32("WG", THREADS),
    ]
}

/// Records each of `products` (`output.output = part · input`, all of one input): `input`
/// converted to f16 once, then for each slice of each part's rows a dequantization and a
/// product, K split over `output.split_scratch` where the rows launch too few workgroups.
pub fn record_half_matmul(
    ctx: &GpuContext,
    ops: &mut OpList,
    products: &[PartProduct],
    input: &GpuTensor,
    operands: &HalfOperands,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let Some(first) = products.first() else {
        return Ok(());
    };
    let row_len = first.part.matrix.row_len;
    check_width(KERNEL, "input", input, row_len)?;
    if !operands.serve(row_len) {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("'{}': rows of {row_len} values", first.part.matrix.name),
        });
    }
    let max_tokens = products.iter().map(|p| p.output.output.rows()).max().unwrap_or(0).min(input.rows());
    let labels: Vec<&str> = products.iter().map(|p| p.label.as_str()).collect();
    let label = joined_label(&labels);
    ops.push(convert_dispatch(ctx, &label, input, operands, max_tokens, step)?);
    if let Some(parts) = stacked_parts(products, operands) {
        return record_stacked_product(ctx, ops, &label, (&parts, input.rows()), operands, step);
    }
    for product in products {
        record_product(ctx, ops, product, input, operands, step)?;
    }
    Ok(())
}

/// A product of `record_stacked_product` and where its rows lie: in `chunk` of its matrix.
struct StackedPart<'a> {
    product: &'a PartProduct<'a>,
    chunk: &'a MatrixChunk,
}

/// `products` as the three parts of one stacked product where they can be: each part in one
/// chunk of its matrix, in whole tiles of rows, writing its own output, and all of them in
/// one slice of the f16 weights.
fn stacked_parts<'a>(
    products: &'a [PartProduct<'a>],
    operands: &HalfOperands,
) -> Option<[StackedPart<'a>; 3]> {
    let [a, b, c] = products else {
        return None;
    };
    let outputs = [a, b, c].map(|p| p.output.output);
    let distinct = (0..3).all(|i| (i + 1..3).all(|j| !std::ptr::eq(outputs[i], outputs[j])));
    let rows: u32 = products.iter().map(|p| p.part.rows.len() as u32).sum();
    let row_len = a.part.matrix.row_len;
    let fits = products.iter().all(|p| {
        let n = p.part.rows.len() as u32;
        p.part.matrix.row_len == row_len
            && n > 0
            && n.is_multiple_of(TILE_ROWS)
            && p.output.output.width() == n
    });
    if !distinct || !fits || rows > operands.slice_rows(row_len) {
        return None;
    }
    let part =
        |product: &'a PartProduct<'a>| Some(StackedPart { product, chunk: chunk_holding(&product.part)? });
    Some([part(a)?, part(b)?, part(c)?])
}

/// The chunk of its matrix that holds every row of `part`, if one does.
fn chunk_holding<'a>(part: &MatrixRows<'a>) -> Option<&'a MatrixChunk> {
    let MatrixRows { matrix, rows } = part;
    matrix
        .chunks
        .iter()
        .find(|chunk| (chunk.first_row..chunk.first_row + chunk.rows).contains(&rows.start))
        .filter(|chunk| !rows.is_empty() && rows.end <= chunk.first_row + chunk.rows)
}

/// Records `parts` as one product (matmul_half.wgsl's STACKED) on the converted input: each
/// part's rows dequantized one after the other into the f16 weights, then one product whose
/// row tiles write their part's output.
fn record_stacked_product(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    (parts, input_rows): (&[StackedPart; 3], u32),
    operands: &HalfOperands,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    // Parts that follow each other in one chunk (q and k of one stack) dequantize in one pass,
    // each run's rows after the runs before it.
    let mut out_row0 = 0;
    let follows = |a: &StackedPart, b: &StackedPart| {
        std::ptr::eq(a.chunk, b.chunk) && b.product.part.rows.start == a.product.part.rows.end
    };
    for run in parts.chunk_by(follows) {
        let (first, last) = (&run[0], &run[run.len() - 1]);
        let chunk = first.chunk;
        let in_chunk =
            first.product.part.rows.start - chunk.first_row..last.product.part.rows.end - chunk.first_row;
        let labels: Vec<&str> = run.iter().map(|part| part.product.label.as_str()).collect();
        let weights_label = format!("{} f16 weights", joined_label(&labels));
        let out = (&operands.weights, out_row0);
        out_row0 += in_chunk.len() as u32;
        ops.push(dequantize_dispatch(
            ctx,
            &weights_label,
            first.product.part.matrix,
            (chunk, in_chunk),
            out,
        )?);
    }
    let [rows0, rows1, rows2] = parts.each_ref().map(|part| part.product.part.rows.len() as u32);
    let [out0, out1, out2] = parts.each_ref().map(|part| part.product.output.output);
    let row_len = parts[0].product.part.matrix.row_len;
    let max_tokens = [out0, out1, out2].iter().map(|out| out.rows()).min().unwrap_or(0).min(input_rows);
    let params = ProductParams {
        part1_row: rows0,
        part2_row: rows0 + rows1,
        ..ProductParams::unsplit(rows0 + rows1 + rows2, row_len, max_tokens)
    };
    let mut defines = product_defines().to_vec();
    defines.push(Define::flag("STACKED"));
    ops.push(product_dispatch(ctx, label, &defines, params, (operands, &[out0, out1, out2]), step)?);
    Ok(())
}

const KERNEL: &str = "f16 matmul";

/// The conversion of the step's rows of `input` (up to `max_tokens`) to f16 into `operands`.
fn convert_dispatch(
    ctx: &GpuContext,
    label: &str,
    input: &GpuTensor,
    operands: &HalfOperands,
    max_tokens: u32,
    step: &StepBuffer,
) -> Result<Dispatch, KernelError> {
    let row_len = input.width();
    let quads_per_token = row_len / 4;
    let max_per_dimension = ctx.caps.max_workgroups_per_dimension;
    let params = ctx.uniform_buffer(label, &ConvertParams { row_len, max_tokens });
    make_dispatch(
        ctx,
        &format!("{label} f16 input"),
        "convert_half.wgsl",
        "main",
        &[Define::u32("WG", CONVERT_THREADS)],
        &[input.buffer(), operands.input.buffer(), step.buffer(), &params],
        Workgroups::PerStep(Box::new(move |n_tokens| {
            grid((n_tokens.min(max_tokens) * quads_per_token).div_ceil(CONVERT_THREADS), max_per_dimension)
        })),
    )
}

/// Whether `record_half_gated` can fuse `gate` and `up`: rows of one chunk of one matrix, as
/// many of each, in whole groups of 16, and operands that serve their rows.
pub fn fuses_gated(gate: &PartProduct, up: &PartProduct, operands: &HalfOperands) -> bool {
    let (w, gate_rows, up_rows) = (gate.part.matrix, &gate.part.rows, &up.part.rows);
    std::ptr::eq(w, up.part.matrix)
        && w.chunks.len() == 1
        && gate_rows.len() == up_rows.len()
        && gate_rows.len().is_multiple_of(16)
        && gate_rows.end <= up_rows.start
        && up_rows.end <= w.rows
        && operands.serve(w.row_len)
        && operands.slice_rows(w.row_len) >= 2 * TILE_ROWS
}

/// Records the gated feed-forward input `gate.output = act(gate · input) · (up · input)` in
/// one product a slice (matmul_half.wgsl's GATED) where `fuses_gated` says it can: `input`
/// converted to f16, then for each slice of gate rows the slice and its up rows dequantized
/// interleaved and multiplied; K is not split (the stacked rows fill the GPU).
#[allow(clippy::too_many_arguments)]
pub fn record_half_gated(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    (gate, up): (&PartProduct, &PartProduct),
    input: &GpuTensor,
    activation: Activation,
    operands: &HalfOperands,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let w = gate.part.matrix;
    let output = gate.output.output;
    let n = gate.part.rows.len() as u32;
    if !fuses_gated(gate, up, operands) {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("'{}': rows {:?} and {:?} do not fuse", w.name, gate.part.rows, up.part.rows),
        });
    }
    check_width(KERNEL, "input", input, w.row_len)?;
    check_width(KERNEL, "output", output, n)?;
    let max_tokens = input.rows().min(output.rows());
    ops.push(convert_dispatch(
        ctx,
        &joined_label(&[&gate.label, &up.label]),
        input,
        operands,
        max_tokens,
        step,
    )?);
    let mut defines = product_defines().to_vec();
    defines.push(Define::flag("GATED"));
    if activation == Activation::GeluTanh {
        defines.push(Define::flag("GELU_TANH"));
    }
    let chunk = &w.chunks[0];
    let pair_offset = up.part.rows.start - gate.part.rows.start;
    // Halves of 64 rows keep each slice's 2 · rows in whole tiles.
    let slice_rows = even_slices(n, operands.slice_rows(w.row_len) / 2, TILE_ROWS / 2);
    for slice_start in (0..n).step_by(slice_rows as usize) {
        let slice_len = slice_rows.min(n - slice_start);
        let first = gate.part.rows.start + slice_start - chunk.first_row;
        let slice = (chunk, first..first + slice_len);
        let weights_label = format!("{label} f16 weights");
        ops.push(dequantize_pairs_dispatch(
            ctx,
            &weights_label,
            w,
            slice,
            pair_offset,
            (&operands.weights, 0),
        )?);
        let params = ProductParams {
            out_stride: n,
            first_row: slice_start,
            ..ProductParams::unsplit(2 * slice_len, w.row_len, max_tokens)
        };
        ops.push(product_dispatch(ctx, label, &defines, params, (operands, &[output]), step)?);
    }
    Ok(())
}

/// One product of `record_half_matmul` on its converted input.
fn record_product(
    ctx: &GpuContext,
    ops: &mut OpList,
    product: &PartProduct,
    input: &GpuTensor,
    operands: &HalfOperands,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let PartProduct { label, part: MatrixRows { matrix: w, rows }, output } = product;
    let ProductOutput { output, split_scratch: scratch, .. } = *output;
    let rows = rows.clone();
    if !operands.serve(w.row_len) || rows.is_empty() || rows.end > w.rows {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("'{}': rows {rows:?} of {} values", w.name, w.row_len),
        });
    }
    weight_type_define(KERNEL, w)?;
    let out_stride = rows.len() as u32;
    check_width(KERNEL, "input", input, w.row_len)?;
    check_width(KERNEL, "output", output, out_stride)?;
    let max_tokens = input.rows().min(output.rows());
    let scratch_floats = scratch.map_or(0, GpuTensor::len);
    let (splits, split_len) =
        k_splits(PRODUCT_TILE, TARGET_WORKGROUPS, (out_stride, w.row_len), max_tokens, scratch_floats);
    let (target, split_stride) = match scratch {
        Some(scratch) if splits > 1 => (scratch, max_tokens * out_stride),
        _ => (output, 0),
    };

    let product_defines = product_defines();
    for (index, chunk) in w.chunks.iter().enumerate() {
        // The chunk's rows that are in `rows`, as offsets within the chunk.
        let first = rows.start.max(chunk.first_row) - chunk.first_row;
        let end = rows.end.min(chunk.first_row + chunk.rows).saturating_sub(chunk.first_row);
        if first >= end {
            continue;
        }
        let chunk_label = chunk_label(label, w, index);
        let slice_rows = even_slices(end - first, operands.slice_rows(w.row_len), TILE_ROWS);
        for slice_start in (first..end).step_by(slice_rows as usize) {
            let slice_len = slice_rows.min(end - slice_start);
            let slice = (chunk, slice_start..slice_start + slice_len);
            ops.push(dequantize_dispatch(
                ctx,
                &format!("{chunk_label} f16 weights"),
                w,
                slice,
                (&operands.weights, 0),
            )?);
            let params = ProductParams {
                out_stride,
                first_row: chunk.first_row + slice_start - rows.start,
                splits,
                split_len,
                split_stride,
                ..ProductParams::unsplit(slice_len, w.row_len, max_tokens)
            };
            let operands_out = (operands, &[target][..]);
            ops.push(product_dispatch(ctx, &chunk_label, &product_defines, params, operands_out, step)?);
        }
    }
    if split_stride > 0 {
        let slices = KSlices { count: splits, stride: split_stride };
        record_sum_slices(ctx, ops, &format!("{label} (K splits)"), (target, slices), output, step)?;
    }
    Ok(())
}

/// Rows per slice for `rows` rows in slices of at most `max` (a positive multiple of `unit`):
/// as few slices as `max` allows, as even as whole `unit`s make them (a last slice of a few
/// rows would launch a product of a few workgroups), and never 0 (a step for `step_by`).
fn even_slices(rows: u32, max: u32, unit: u32) -> u32 {
    let slices = rows.div_ceil(max).max(1);
    rows.div_ceil(slices).next_multiple_of(unit).clamp(unit, max)
}

#[cfg(test)]
#[test]
fn slices_are_even_whole_units_within_the_limit() {
    // Qwen2.5 7B's 18,944 gate rows in halves of at most 18,688: two of 9,472, not 18,688 and 256.
    assert_eq!(even_slices(18_944, 18_688, 64), 9_472);
    assert_eq!(even_slices(14_336, 16_384, 64), 14_336);
    assert_eq!(even_slices(1_000, 128, 128), 128);
    assert_eq!(even_slices(300, 256, 128), 256);
    // A chunk that holds none of a product's rows still gets a usable step.
    assert_eq!(even_slices(0, 256, 128), 128);
}

/// Records `out = W[rows]` as f16, row-major, for `rows` of `w` that lie in one of its chunks:
/// the dequantization the f16 products run before each slice of weights.
pub fn record_dequantize_half(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    part: MatrixRows,
    out: &GpuTensor,
) -> Result<(), KernelError> {
    let chunk = chunk_holding(&part);
    let MatrixRows { matrix: w, rows } = part;
    let Some(chunk) = chunk else {
        return Err(KernelError::InvalidShape {
            kernel: "f16 dequantization",
            message: format!("'{}': rows {rows:?} do not lie in one chunk", w.name),
        });
    };
    if out.size_bytes() < rows.len() as u64 * u64::from(w.row_len) * 2 {
        return Err(KernelError::InvalidShape {
            kernel: "f16 dequantization",
            message: format!("'{}': {} holds fewer than {} rows", w.name, out.describe(), rows.len()),
        });
    }
    let in_chunk = rows.start - chunk.first_row..rows.end - chunk.first_row;
    ops.push(dequantize_dispatch(ctx, label, w, (chunk, in_chunk), (out, 0))?);
    Ok(())
}

/// The dequantization of rows `slice.1` of chunk `slice.0` of `w` into `out` as f16 from its
/// row `out_row0` on, 8 values a thread.
fn dequantize_dispatch(
    ctx: &GpuContext,
    label: &str,
    w: &GpuMatrix,
    (chunk, rows): (&MatrixChunk, Range<u32>),
    (out, out_row0): (&GpuTensor, u32),
) -> Result<Dispatch, KernelError> {
    dequantize_pairs_dispatch(ctx, label, w, (chunk, rows), 0, (out, out_row0))
}

/// As `dequantize_dispatch`, with rows `rows` each followed 16 at a time by the same rows
/// `pair_offset` further where that is not 0 (2 · rows.len() rows out).
fn dequantize_pairs_dispatch(
    ctx: &GpuContext,
    label: &str,
    w: &GpuMatrix,
    (chunk, rows): (&MatrixChunk, Range<u32>),
    pair_offset: u32,
    (out, out_row0): (&GpuTensor, u32),
) -> Result<Dispatch, KernelError> {
    let out_rows = if pair_offset > 0 { 2 * rows.len() as u32 } else { rows.len() as u32 };
    let defines = [
        weight_type_define("f16 dequantization", w)?,
        Define::u32("WG", CONVERT_THREADS),
        Define::u32("ROW_LEN", w.row_len),
        Define::u32("ROW_BYTES", w.row_bytes as u32),
    ];
    let params = ctx.uniform_buffer(
        label,
        &DequantizeParams { rows: out_rows, weight_row0: rows.start, pair_offset, out_row0 },
    );
    let threads = out_rows * (w.row_len / DEQUANTIZED_PER_THREAD);
    let workgroups = grid(threads.div_ceil(CONVERT_THREADS), ctx.caps.max_workgroups_per_dimension);
    let dispatch = make_dispatch(
        ctx,
        label,
        "dequantize_half.wgsl",
        "main",
        &defines,
        &[&chunk.buffer, out.buffer(), &params],
        Workgroups::Fixed(workgroups),
    )?;
    Ok(dispatch.reading(WeightBytes::Fixed(u64::from(out_rows) * w.row_bytes)))
}

#[cfg(test)]
mod translation_tests {
    //! Lavapipe has no cooperative matrices, so the product runs only on adapters that have
    //! them (tests/kernels_matmul.rs checks it there); here naga parses, validates and
    //! translates its kernels to SPIR-V, the dequantization for every weight type, and the
    //! product's shared memory is what `runs_on` budgets.
    use super::*;
    use crate::{
        kernels::{
            matmul::type_define,
            spirv_translation::{translate, workgroup_bytes},
        },
        quant::SUPPORTED_TYPES,
    };

    #[test]
    fn kernels_translate_to_spirv() {
        let module = translate("matmul_half.wgsl", &product_defines());
        assert_eq!(workgroup_bytes(&module, &[]), SHARED_BYTES);
        let stacked: Vec<Define> = product_defines().into_iter().chain([Define::flag("STACKED")]).collect();
        assert_eq!(workgroup_bytes(&translate("matmul_half.wgsl", &stacked), &[]), SHARED_BYTES);
        for activation in [None, Some(Define::flag("GELU_TANH"))] {
            let defines: Vec<Define> =
                product_defines().into_iter().chain([Define::flag("GATED")]).chain(activation).collect();
            assert_eq!(workgroup_bytes(&translate("matmul_half.wgsl", &defines), &[]), SHARED_BYTES);
        }
        translate("convert_half.wgsl", &[Define::u32("WG", CONVERT_THREADS)]);
        for ty in SUPPORTED_TYPES {
            let row = [
                Define::u32("ROW_LEN", 2_048),
                Define::u32("ROW_BYTES", ty.row_bytes(2_048).unwrap() as u32),
            ];
            translate(
                "dequantize_half.wgsl",
                &[[type_define(ty), Define::u32("WG", CONVERT_THREADS)].as_slice(), &row].concat(),
            );
        }
    }
}
