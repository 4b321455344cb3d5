use bytemuck::{Pod, Zeroable};

use super::{base_defines, check_same_rows, check_width, make_dispatch, workgroups_per_token, KernelError};
use crate::gpu::{Define, GpuContext, GpuTensor, OpList, StepBuffer};

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
    /// Write to another tensor of the input's shape.
    To(&'a GpuTensor),
    /// Add to another tensor of the input's shape: Gemma's post-norms fused with the residual
    /// connection.
    AddTo(&'a GpuTensor),
}

/// An RMSNorm's weights (one row) and epsilon.
#[derive(Clone, Copy)]
pub struct RmsNorm<'a> {
    pub weight: &'a GpuTensor,
    pub eps: f32,
}

/// Records `norm` per token of the step over each run of `norm.weight.width()` values of
/// `input`: one run per token, or one per head (Gemma's q/k norms).
pub fn record_rms_norm(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    input: &GpuTensor,
    norm: RmsNorm,
    output: NormOutput,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    const KERNEL: &str = "rms norm";
    let RmsNorm { weight, eps } = norm;
    let dim = weight.width();
    if dim == 0 || !input.width().is_multiple_of(dim) {
        return Err(KernelError::InvalidShape {
            kernel: KERNEL,
            message: format!("input {} is not runs of the norm's {dim} values", input.describe()),
        });
    }
    check_width(KERNEL, "input", input, input.width())?;
    let rows_per_token = input.width() / dim;
    if let NormOutput::To(out) | NormOutput::AddTo(out) = output {
        check_width(KERNEL, "output", out, input.width())?;
        check_same_rows(KERNEL, ("input", input), ("output", out))?;
    }
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
                &[input.buffer(), weight.buffer(), step.buffer(), &params],
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
                &[input.buffer(), weight.buffer(), out.buffer(), step.buffer(), &params],
                workgroups_per_token(ctx, rows_per_token),
            )?
        }
    };
    ops.push(dispatch);
    Ok(())
}
