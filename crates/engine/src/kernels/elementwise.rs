use bytemuck::{Pod, Zeroable};

use super::{base_defines, check_width, make_dispatch, threads_per_token, KernelError};
use crate::gpu::{grid, Define, GpuContext, GpuTensor, OpList, StepBuffer, Workgroups};

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
    super::wgsl_layout::assert_wgsl_layout!(SliceParams, "sum_slices.wgsl", "Params", { row_len: u32, slices: u32, slice_stride: u32 });
}

/// The activation of a gated feed-forward block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Gemma's GELU with the tanh approximation.
    GeluTanh,
    /// SiLU (swish): Llama, Qwen, Phi.
    Silu,
}

/// Records `gate = act(gate) · up` per token of the step.
pub fn record_gated_activation(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    gate: &GpuTensor,
    up: &GpuTensor,
    step: &StepBuffer,
    activation: Activation,
) -> Result<(), KernelError> {
    let row_len = gate.width();
    check_width("gated activation", "up", up, row_len)?;
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
        &[gate.buffer(), up.buffer(), step.buffer(), &params],
        threads_per_token(ctx, row_len),
    )?);
    Ok(())
}

/// Records `target += addend` per token of the step: a residual connection.
pub fn record_add(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    target: &GpuTensor,
    addend: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let row_len = target.width();
    check_width("add", "addend", addend, row_len)?;
    let params = ctx.uniform_buffer(label, &RowParams { row_len, _pad: [0; 3] });
    ops.push(make_dispatch(
        ctx,
        label,
        "elementwise.wgsl",
        "add",
        &base_defines(),
        &[target.buffer(), addend.buffer(), step.buffer(), &params],
        threads_per_token(ctx, row_len),
    )?);
    Ok(())
}

/// Records copying the step's last token's row of `rows` into `last`.
pub fn record_copy_last_row(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    rows: &GpuTensor,
    last: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let row_len = rows.width();
    check_width("copy last row", "last", last, row_len)?;
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
        &[rows.buffer(), last.buffer(), step.buffer(), &params],
        workgroups,
    )?);
    Ok(())
}

/// How a split-K matmul lays out its partial sums in a scratch tensor: `count` slices of
/// [n_tokens, row_len], `stride` elements apart.
#[derive(Debug, Clone, Copy)]
pub struct KSlices {
    pub count: u32,
    pub stride: u32,
}

/// Records `sum[t, i] = Σ_s slices[s · stride + t · row_len + i]` per token of the step, with
/// `row_len` the width of `sum`: adds up the partial sums of a split-K matmul.
pub fn record_sum_slices(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    slices: (&GpuTensor, KSlices),
    sum: &GpuTensor,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let (scratch, KSlices { count, stride }) = slices;
    let row_len = sum.width();
    let needed =
        u64::from(count.saturating_sub(1)) * u64::from(stride) + u64::from(sum.rows()) * u64::from(row_len);
    if scratch.len() < needed {
        return Err(KernelError::InvalidShape {
            kernel: "sum slices",
            message: format!(
                "{} holds {} values, {count} slices need {needed}",
                scratch.describe(),
                scratch.len()
            ),
        });
    }
    let params =
        ctx.uniform_buffer(label, &SliceParams { row_len, slices: count, slice_stride: stride, _pad: 0 });
    let mut defines = base_defines();
    let width = if row_len.is_multiple_of(4) && stride.is_multiple_of(4) {
        defines.push(Define::flag("VECTORS"));
        4
    } else {
        1
    };
    ops.push(make_dispatch(
        ctx,
        label,
        "sum_slices.wgsl",
        "main",
        &defines,
        &[scratch.buffer(), sum.buffer(), step.buffer(), &params],
        threads_per_token(ctx, row_len / width),
    )?);
    Ok(())
}
