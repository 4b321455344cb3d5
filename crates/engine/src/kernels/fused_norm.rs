//! A residual connection fused with the RMSNorm that follows it: one dispatch where the
//! unfused path has two (Llama: add, norm) or three (Gemma: post-norm added to the residual,
//! then the next pre-norm).

use bytemuck::{Pod, Zeroable};

use super::{make_dispatch, workgroups_per_token, KernelError};
use crate::gpu::{Define, GpuContext, OpList};

/// Threads per workgroup: a power of two at or above a thread per vector of 4 values, so a
/// row takes one round of loads (rows of up to 4096 values on adapters with 1024 threads).
fn workgroup_size(ctx: &GpuContext, dim: u32) -> u32 {
    (dim / 4).next_power_of_two().clamp(64, ctx.caps.max_workgroup_invocations.min(1024))
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ResidualNormParams {
    dim_vec4s: u32,
    eps: f32,
    _pad: [u32; 2],
}

#[cfg(test)]
#[test]
fn residual_norm_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(ResidualNormParams, "fused_residual_norm.wgsl", "Params", { dim_vec4s: u32, eps: f32 });
}

/// The buffers of a residual step, all [n_tokens, dim].
pub struct ResidualRows<'a> {
    /// The block's output.
    pub block_out: &'a wgpu::Buffer,
    /// The residual stream, updated in place.
    pub hidden: &'a wgpu::Buffer,
    /// Receives the normed residual stream.
    pub normed: &'a wgpu::Buffer,
}

/// Records `hidden += post_norm.map_or(block_out, |w| rmsnorm(block_out)·w)` and then
/// `normed = rmsnorm(hidden)·next_norm`, per token of the step.
#[allow(clippy::too_many_arguments)]
pub fn record_residual_norm(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    rows: ResidualRows,
    post_norm: Option<&wgpu::Buffer>,
    next_norm: &wgpu::Buffer,
    step: &wgpu::Buffer,
    dim: u32,
    eps: f32,
) -> Result<(), KernelError> {
    if !dim.is_multiple_of(4) {
        return Err(KernelError::InvalidShape {
            kernel: "residual norm",
            message: format!("rows of {dim} values (need a multiple of 4)"),
        });
    }
    let params = ctx.uniform_buffer(label, &ResidualNormParams { dim_vec4s: dim / 4, eps, _pad: [0; 2] });
    let mut defines = vec![Define::u32("WG", workgroup_size(ctx, dim))];
    let mut buffers = vec![rows.block_out, rows.hidden, next_norm, rows.normed, step, &params];
    if let Some(post_norm) = post_norm {
        defines.push(Define::flag("POST_NORM"));
        buffers.push(post_norm);
    }
    ops.push(make_dispatch(
        ctx,
        label,
        "fused_residual_norm.wgsl",
        "main",
        &defines,
        &buffers,
        workgroups_per_token(ctx, 1),
    )?);
    Ok(())
}
