//! The token-embedding gather: rows of a table kept in its GGUF block layout, dequantized and
//! scaled into the hidden state.

use bytemuck::{Pod, Zeroable};

use super::{
    check_same_rows, check_width, make_dispatch,
    matmul::{chunk_label, weight_type_define},
    KernelError,
};
use crate::gpu::{
    grid, Define, Element, GpuContext, GpuMatrix, GpuTensor, OpList, StepBuffer, WeightBytes, Workgroups,
};

const EMBEDDING_THREADS: u32 = 64;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct EmbeddingParams {
    row_len: u32,
    row_bytes: u32,
    first_row: u32,
    rows: u32,
    total_rows: u32,
    last_chunk: u32,
    max_tokens: u32,
    scale: f32,
}

#[cfg(test)]
#[test]
fn embedding_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(EmbeddingParams, "embedding.wgsl", "Params", { row_len: u32, row_bytes: u32, first_row: u32, rows: u32, total_rows: u32, last_chunk: u32, max_tokens: u32, scale: f32 });
}

/// A token-embedding table and the factor its rows are scaled by: Gemma's sqrt(hidden), 1
/// elsewhere.
#[derive(Clone, Copy)]
pub struct ScaledTable<'a> {
    pub table: &'a GpuMatrix,
    pub scale: f32,
}

/// Writes `scale · table[tokens[t]]` (dequantized) to row t of `output` for each token t of
/// the step (`tokens`: one u32 id a row). Ids past the end of the table give zeros.
pub fn record_embedding(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    table: ScaledTable,
    tokens: &GpuTensor,
    output: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    const KERNEL: &str = "embedding";
    let ScaledTable { table, scale } = table;
    let defines = [weight_type_define(KERNEL, table)?, Define::u32("WG", EMBEDDING_THREADS)];
    if tokens.width() != 1 || tokens.element() != Element::U32 {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("tokens {} is not one u32 id a row", tokens.describe()),
        });
    }
    check_width(KERNEL, "output", output, table.row_len)?;
    check_same_rows(KERNEL, ("tokens", tokens), ("output", output))?;
    let max_tokens = tokens.rows();
    let groups_per_token = (table.row_len / 4).div_ceil(EMBEDDING_THREADS);
    let max_per_dimension = ctx.caps.max_workgroups_per_dimension;
    let Some(last) = table.chunks.len().checked_sub(1) else {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("'{}' has no rows", table.name),
        });
    };
    for (index, chunk) in table.chunks.iter().enumerate() {
        let label = chunk_label(label, table, index);
        // A token's row lies in one chunk, which one the host does not know: each chunk counts
        // its share of the rows, so the chunks of a step add up to a row per token.
        let row_share = table.row_bytes * u64::from(chunk.rows) / u64::from(table.rows);
        let params = ctx.uniform_buffer(
            &label,
            &EmbeddingParams {
                row_len: table.row_len,
                row_bytes: table.row_bytes as u32,
                first_row: chunk.first_row,
                rows: chunk.rows,
                total_rows: table.rows,
                last_chunk: u32::from(index == last),
                max_tokens,
                scale,
            },
        );
        let workgroups = Workgroups::PerStep(Box::new(move |n_tokens| {
            grid(n_tokens.min(max_tokens) * groups_per_token, max_per_dimension)
        }));
        ops.push(
            make_dispatch(
                ctx,
                &label,
                "embedding.wgsl",
                "main",
                &defines,
                &[&chunk.buffer, tokens.buffer(), output.buffer(), step.buffer(), &params],
                workgroups,
            )?
            .reading(WeightBytes::PerToken(row_share)),
        );
    }
    Ok(())
}
