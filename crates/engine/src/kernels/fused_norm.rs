//! A residual connection fused with the RMSNorm that follows it: one dispatch where the
//! unfused path has two (Llama: add, norm) or three (Gemma: post-norm added to the residual,
//! then the next pre-norm).

use super::matmul::Q8Vector;
use super::{check_same_rows, check_width, make_numbered_dispatch, workgroups_per_token, KernelError};
use crate::gpu::{Define, GpuContext, GpuTensor, OpList, StepBuffer};

/// Threads per workgroup and vectors of 4 values a thread (ROUNDS) for rows of `dim` values:
/// a thread per vector up to the adapter's (or 1,024) threads, in whole 32-lane groups with
/// subgroups and as a power of two for the shared-memory tree without. H200, tg128 at depth
/// 0: Llama 3.2 3B 494 -> 502 tokens/s, Gemma 3 4B 356 -> 373 against at most 256 threads
/// holding several vectors each.
fn workgroup_shape(ctx: &GpuContext, dim: u32) -> (u32, u32) {
    let vectors = dim / 4;
    let most = ctx.caps.max_workgroup_invocations.min(1024);
    let threads = if ctx.caps.subgroups {
        vectors.next_multiple_of(32).min(most)
    } else {
        vectors.next_power_of_two().clamp(64, most)
    };
    (threads, vectors.div_ceil(threads))
}

/// The tensors of a residual step, all rows of the hidden width.
pub struct ResidualRows<'a> {
    /// The block's output.
    pub block_out: &'a GpuTensor,
    /// The residual stream, updated in place.
    pub hidden: &'a GpuTensor,
    /// Receives the normed residual stream.
    pub normed: &'a GpuTensor,
    /// Also receives the first token's row in Q8 form (decode), for products that read it so.
    pub normed_q8: Option<&'a Q8Vector>,
}

/// The norm weights around a residual add: the block's own post-norm (Gemma) and the next
/// pre-norm, each one row of the hidden width.
#[derive(Clone, Copy)]
pub struct ResidualNorms<'a> {
    pub post_norm: Option<&'a GpuTensor>,
    pub next_norm: &'a GpuTensor,
    pub eps: f32,
}

/// Records `hidden += post_norm.map_or(block_out, |w| rmsnorm(block_out)·w)` and then
/// `normed = rmsnorm(hidden)·next_norm`, per token of the step.
pub fn record_residual_norm(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    rows: ResidualRows,
    norms: ResidualNorms,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    const KERNEL: &str = "residual norm";
    let ResidualNorms { post_norm, next_norm, eps } = norms;
    let dim = rows.hidden.width();
    if !dim.is_multiple_of(4) {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("rows of {dim} values (need a multiple of 4)"),
        });
    }
    for (role, tensor) in
        [("block output", rows.block_out), ("normed", rows.normed), ("next norm", next_norm)]
            .into_iter()
            .chain(post_norm.map(|norm| ("post-norm", norm)))
    {
        check_width(KERNEL, role, tensor, dim)?;
    }
    check_same_rows(KERNEL, ("block output", rows.block_out), ("residual stream", rows.hidden))?;
    check_same_rows(KERNEL, ("normed", rows.normed), ("residual stream", rows.hidden))?;
    let (threads, rounds) = workgroup_shape(ctx, dim);
    let mut defines = vec![
        Define::u32("WG", threads),
        Define::u32("ROUNDS", rounds),
        Define::u32("DIM_VEC4S", dim / 4),
        Define::f32("EPS", eps),
    ];
    if ctx.caps.subgroups {
        defines.push(Define::flag("SUBGROUPS"));
    }
    let buffers = [rows.block_out, rows.hidden, next_norm, rows.normed].map(GpuTensor::buffer);
    let mut bound: Vec<(u32, &wgpu::Buffer)> = (0..).zip(buffers).collect();
    bound.push((4, step.buffer()));
    if let Some(post_norm) = post_norm {
        defines.push(Define::flag("POST_NORM"));
        bound.push((6, post_norm.buffer()));
    }
    if let Some(q8) = rows.normed_q8 {
        if q8.len != dim {
            return Err(KernelError::InvalidShape {
                kernel: KERNEL,
                message: format!("a Q8 output of {} values for rows of {dim}", q8.len),
            });
        }
        defines.push(Define::flag("Q8_OUT"));
        bound.extend([(7, q8.words.buffer()), (8, q8.scales.buffer())]);
    }
    ops.push(make_numbered_dispatch(
        ctx,
        label,
        "fused_residual_norm.wgsl",
        "main",
        &defines,
        &bound,
        workgroups_per_token(ctx, 1),
    )?);
    Ok(())
}
