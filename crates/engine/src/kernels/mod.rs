//! Rust side of the WGSL kernels: each module records its dispatches into an `OpList`
//! and is tested against a CPU reference.

use crate::gpu::PipelineError;

pub mod attention;
pub mod decode_attention;
pub mod elementwise;
pub mod embedding;
pub mod fused_norm;
pub mod fused_qk;
pub mod matmul;
pub mod matmul_half;
pub mod norm;
pub mod rope;
pub mod sampling;
#[cfg(test)]
mod spirv_translation;
#[cfg(test)]
mod wgsl_layout;

/// Why a kernel could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error("{kernel}: weight type {ty} is not supported")]
    UnsupportedType { kernel: &'static str, ty: &'static str },
    #[error("{kernel}: {message}")]
    InvalidShape { kernel: &'static str, message: String },
}

use crate::gpu::{grid, Define, Dispatch, Element, GpuContext, GpuTensor, Workgroups};

/// Errors unless `tensor` holds f32 rows of `width` values.
pub(crate) fn check_width(
    kernel: &'static str,
    role: &str,
    tensor: &GpuTensor,
    width: u32,
) -> Result<(), KernelError> {
    if tensor.width() != width || tensor.element() != Element::F32 {
        return Err(KernelError::InvalidShape {
            kernel,
            message: format!("{role} {} is not rows of {width} f32 values", tensor.describe()),
        });
    }
    Ok(())
}

/// Errors unless `a` and `b` hold as many rows (tokens), so one step fits both.
pub(crate) fn check_same_rows(
    kernel: &'static str,
    a: (&str, &GpuTensor),
    b: (&str, &GpuTensor),
) -> Result<(), KernelError> {
    if a.1.rows() != b.1.rows() {
        return Err(KernelError::InvalidShape {
            kernel,
            message: format!(
                "{} {} and {} {} hold different token counts",
                a.0,
                a.1.describe(),
                b.0,
                b.1.describe()
            ),
        });
    }
    Ok(())
}

/// Threads per workgroup of the norm, rope, attention and element-wise kernels.
pub(crate) const WORKGROUP_SIZE: u32 = 64;

/// Builds a dispatch of `entry` in `shader` with `buffers` bound in order.
pub(crate) fn make_dispatch(
    ctx: &GpuContext,
    label: &str,
    shader: &str,
    entry: &str,
    defines: &[Define],
    buffers: &[&wgpu::Buffer],
    workgroups: Workgroups,
) -> Result<Dispatch, KernelError> {
    let numbered: Vec<(u32, &wgpu::Buffer)> = (0..).zip(buffers.iter().copied()).collect();
    make_numbered_dispatch(ctx, label, shader, entry, defines, &numbered, workgroups)
}

/// As `make_dispatch` with each buffer's binding number given: for shaders whose variants
/// leave gaps in the numbering.
pub(crate) fn make_numbered_dispatch(
    ctx: &GpuContext,
    label: &str,
    shader: &str,
    entry: &str,
    defines: &[Define],
    buffers: &[(u32, &wgpu::Buffer)],
    workgroups: Workgroups,
) -> Result<Dispatch, KernelError> {
    let pipeline = ctx.pipeline(shader, entry, defines)?;
    let bind_group = ctx.bind_group_numbered(label, &pipeline, buffers);
    Ok(Dispatch {
        label: label.to_string().into(),
        pipeline,
        bind_group,
        workgroups,
        switch: None,
        weight_bytes: None,
    })
}

/// Enough workgroups of `WORKGROUP_SIZE` threads for `threads_per_token` threads per token.
pub(crate) fn threads_per_token(ctx: &GpuContext, threads_per_token: u32) -> Workgroups {
    let max = ctx.caps.max_workgroups_per_dimension;
    Workgroups::PerStep(Box::new(move |n_tokens| {
        grid((n_tokens * threads_per_token).div_ceil(WORKGROUP_SIZE), max)
    }))
}

/// One workgroup for each of `groups_per_token` groups of every token.
pub(crate) fn workgroups_per_token(ctx: &GpuContext, groups_per_token: u32) -> Workgroups {
    let max = ctx.caps.max_workgroups_per_dimension;
    Workgroups::PerStep(Box::new(move |n_tokens| grid(n_tokens * groups_per_token, max)))
}

/// `WG` for the shared kernels, plus `F16` where KV caches are stored in half precision.
pub(crate) fn base_defines() -> Vec<Define> {
    vec![Define::u32("WG", WORKGROUP_SIZE)]
}
