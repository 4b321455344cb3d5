use bytemuck::{Pod, Zeroable};

use super::{base_defines, make_dispatch, workgroups_per_token, KernelError};
use crate::gpu::{Define, GpuContext, OpList};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct RmsNormParams {
    dim: u32,
    rows_per_token: u32,
    eps: f32,
    _pad: u32,
}

#[cfg(test)]
#[test]
fn rms_norm_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(RmsNormParams, "rmsnorm.wgsl", "Params", { dim: u32, rows_per_token: u32, eps: f32 });
}

/// Where an RMSNorm's result goes.
#[derive(Clone, Copy)]
pub enum NormOutput<'a> {
    /// Overwrite the input (Gemma's per-head q/k norms).
    InPlace,
    /// Write to another buffer.
    To(&'a wgpu::Buffer),
    /// Add to another buffer: Gemma's post-norms fused with the residual connection.
    AddTo(&'a wgpu::Buffer),
}

/// Records an RMSNorm over `rows_per_token` rows of `dim` values per token of the step.
#[allow(clippy::too_many_arguments)]
pub fn record_rms_norm(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    input: &wgpu::Buffer,
    weight: &wgpu::Buffer,
    output: NormOutput,
    step: &wgpu::Buffer,
    dim: u32,
    rows_per_token: u32,
    eps: f32,
) -> Result<(), KernelError> {
    let params = ctx.uniform_buffer(label, &RmsNormParams { dim, rows_per_token, eps, _pad: 0 });
    let mut defines = base_defines();
    let dispatch = match output {
        NormOutput::InPlace => {
            defines.push(Define::flag("IN_PLACE"));
            make_dispatch(
                ctx,
                label,
                "rmsnorm.wgsl",
                "main",
                &defines,
                &[input, weight, step, &params],
                workgroups_per_token(ctx, rows_per_token),
            )?
        }
        NormOutput::To(out) | NormOutput::AddTo(out) => {
            if matches!(output, NormOutput::AddTo(_)) {
                defines.push(Define::flag("ADD_TO_OUTPUT"));
            }
            make_dispatch(
                ctx,
                label,
                "rmsnorm.wgsl",
                "main",
                &defines,
                &[input, weight, out, step, &params],
                workgroups_per_token(ctx, rows_per_token),
            )?
        }
    };
    ops.push(dispatch);
    Ok(())
}
