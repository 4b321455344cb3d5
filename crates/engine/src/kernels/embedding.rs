//! The token-embedding gather: rows of a table kept in its GGUF block layout, dequantized and
//! scaled into the hidden state.

use bytemuck::{Pod, Zeroable};

use super::{
    make_dispatch,
    matmul::{check_buffer, chunk_label, weight_type_define},
    KernelError,
};
use crate::gpu::{grid, Define, GpuContext, GpuMatrix, OpList, WeightBytes, Workgroups};

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

/// Writes `scale · table[tokens[t]]` (dequantized) to row t of `output` `[n, row_len]` for
/// `t < step.n_tokens` (clamped to `max_tokens`). Ids past the end of the table give zeros.
/// Gemma scales by sqrt(hidden).
#[allow(clippy::too_many_arguments)]
pub fn record_embedding(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    table: &GpuMatrix,
    tokens: &wgpu::Buffer,
    output: &wgpu::Buffer,
    step: &wgpu::Buffer,
    scale: f32,
    max_tokens: u32,
) -> Result<(), KernelError> {
    const KERNEL: &str = "embedding";
    let defines = [weight_type_define(KERNEL, table)?, Define::u32("WG", EMBEDDING_THREADS)];
    check_buffer(KERNEL, "tokens", tokens, u64::from(max_tokens))?;
    check_buffer(KERNEL, "output", output, u64::from(max_tokens) * u64::from(table.row_len))?;
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
                &[&chunk.buffer, tokens, output, step, &params],
                workgroups,
            )?
            .reading(WeightBytes::PerToken(row_share)),
        );
    }
    Ok(())
}
