use bytemuck::{Pod, Zeroable};

use super::{base_defines, make_dispatch, threads_per_token, KernelError};
use crate::gpu::{grid, Define, GpuContext, OpList, Workgroups};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct RowParams {
    row_len: u32,
    _pad: [u32; 3],
}

#[cfg(test)]
#[test]
fn row_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(RowParams, "elementwise.wgsl", "Params", { row_len: u32 });
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SliceParams {
    row_len: u32,
    slices: u32,
    slice_stride: u32,
    _pad: u32,
}

#[cfg(test)]
#[test]
fn slice_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(SliceParams, "elementwise.wgsl", "Params", { row_len: u32, slices: u32, slice_stride: u32 });
}

/// The activation of a gated feed-forward block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Gemma's GELU with the tanh approximation.
    GeluTanh,
    /// SiLU (swish): Llama, Qwen, Phi.
    Silu,
}

/// The two halves of a gated feed-forward input, each [n_tokens, row_len].
pub struct GatePair<'a> {
    pub gate: &'a wgpu::Buffer,
    pub up: &'a wgpu::Buffer,
    pub row_len: u32,
}

/// Records `gate = act(gate) · up` over [n_tokens, row_len].
pub fn record_gated_activation(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    pair: GatePair<'_>,
    step: &wgpu::Buffer,
    activation: Activation,
) -> Result<(), KernelError> {
    let GatePair { gate, up, row_len } = pair;
    let params = ctx.uniform_buffer(label, &RowParams { row_len, _pad: [0; 3] });
    let mut defines = base_defines();
    if activation == Activation::GeluTanh {
        defines.push(Define::flag("GELU_TANH"));
    }
    ops.push(make_dispatch(
        ctx,
        label,
        "elementwise.wgsl",
        "gated_activation",
        &defines,
        &[gate, up, step, &params],
        threads_per_token(ctx, row_len),
    )?);
    Ok(())
}

/// Records `target += addend` over [n_tokens, row_len]: a residual connection.
pub fn record_add(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    target: &wgpu::Buffer,
    addend: &wgpu::Buffer,
    step: &wgpu::Buffer,
    row_len: u32,
) -> Result<(), KernelError> {
    let params = ctx.uniform_buffer(label, &RowParams { row_len, _pad: [0; 3] });
    ops.push(make_dispatch(
        ctx,
        label,
        "elementwise.wgsl",
        "add",
        &base_defines(),
        &[target, addend, step, &params],
        threads_per_token(ctx, row_len),
    )?);
    Ok(())
}

/// Records `rows[t] += row` for every token t of [n_tokens, row_len]: a bias.
pub fn record_add_row(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    rows: &wgpu::Buffer,
    row: &wgpu::Buffer,
    step: &wgpu::Buffer,
    row_len: u32,
) -> Result<(), KernelError> {
    let params = ctx.uniform_buffer(label, &RowParams { row_len, _pad: [0; 3] });
    ops.push(make_dispatch(
        ctx,
        label,
        "elementwise.wgsl",
        "add_row",
        &base_defines(),
        &[rows, row, step, &params],
        threads_per_token(ctx, row_len),
    )?);
    Ok(())
}

/// Records copying the last token's row of `rows` [n_tokens, row_len] into `last`.
pub fn record_copy_last_row(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    rows: &wgpu::Buffer,
    last: &wgpu::Buffer,
    step: &wgpu::Buffer,
    row_len: u32,
) -> Result<(), KernelError> {
    let params = ctx.uniform_buffer(label, &RowParams { row_len, _pad: [0; 3] });
    let workgroups = Workgroups::Fixed(grid(
        row_len.div_ceil(super::WORKGROUP_SIZE),
        ctx.caps.max_workgroups_per_dimension,
    ));
    ops.push(make_dispatch(
        ctx,
        label,
        "elementwise.wgsl",
        "copy_last_row",
        &base_defines(),
        &[rows, last, step, &params],
        workgroups,
    )?);
    Ok(())
}

/// Records `sum[t, i] = Σ_s slices[s · slice_stride + t · row_len + i]` over [n_tokens, row_len]:
/// adds up the partial sums of a split-K matmul.
#[allow(clippy::too_many_arguments)]
pub fn record_sum_slices(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    slices: &wgpu::Buffer,
    sum: &wgpu::Buffer,
    step: &wgpu::Buffer,
    row_len: u32,
    count: u32,
    slice_stride: u32,
) -> Result<(), KernelError> {
    let params = ctx.uniform_buffer(label, &SliceParams { row_len, slices: count, slice_stride, _pad: 0 });
    ops.push(make_dispatch(
        ctx,
        label,
        "elementwise.wgsl",
        "sum_slices",
        &base_defines(),
        &[slices, sum, step, &params],
        threads_per_token(ctx, row_len),
    )?);
    Ok(())
}
