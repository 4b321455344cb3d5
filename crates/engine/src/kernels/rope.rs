use bytemuck::{Pod, Zeroable};

use super::{base_defines, make_dispatch, threads_per_token, KernelError};
use crate::gpu::{Define, GpuContext, OpList};

/// Which elements a rotation pairs up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// (2i, 2i+1): Llama in GGUF, whose Q/K weights were permuted for it.
    Interleaved,
    /// (i, i + rot_dim/2): Gemma, Qwen, Phi.
    Neox,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct RopeParams {
    n_heads: u32,
    head_dim: u32,
    rot_dim: u32,
    max_positions: u32,
}

#[cfg(test)]
#[test]
fn rope_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(RopeParams, "rope.wgsl", "Params", { n_heads: u32, head_dim: u32, rot_dim: u32, max_positions: u32 });
}

/// (cos θ, sin θ) for every position below `max_positions` and every pair, θ = (p / linear_scale)·base^(-2i/rot_dim),
/// with the frequencies built by repeated f32 multiplication as llama.cpp does.
pub fn rope_table(theta_base: f32, rot_dim: u32, max_positions: u32, linear_scale: f32) -> Vec<[f32; 2]> {
    let frequency_scale = 1.0 / linear_scale;
    let pairs = rot_dim / 2;
    let step_scale = theta_base.powf(-2.0 / rot_dim as f32);
    let mut frequencies = Vec::with_capacity(pairs as usize);
    let mut frequency = frequency_scale;
    for _ in 0..pairs {
        frequencies.push(frequency);
        frequency *= step_scale;
    }
    let mut table = Vec::with_capacity((max_positions * pairs) as usize);
    for pos in 0..max_positions {
        for &f in &frequencies {
            let theta = pos as f32 * f;
            table.push([theta.cos(), theta.sin()]);
        }
    }
    table
}

/// The GPU copy of a `rope_table`, shared by every layer with the same base.
pub struct RopeTable {
    pub buffer: wgpu::Buffer,
    pub rot_dim: u32,
    pub max_positions: u32,
}

impl RopeTable {
    pub fn new(
        ctx: &GpuContext,
        theta_base: f32,
        rot_dim: u32,
        max_positions: u32,
        linear_scale: f32,
    ) -> Self {
        let table = rope_table(theta_base, rot_dim, max_positions, linear_scale);
        let buffer = ctx.storage_buffer("rope table", bytemuck::cast_slice(&table));
        Self { buffer, rot_dim, max_positions }
    }
}

/// Records RoPE in place on `x` = [n_tokens, n_heads, head_dim].
#[allow(clippy::too_many_arguments)]
pub fn record_rope(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    x: &wgpu::Buffer,
    table: &RopeTable,
    step: &wgpu::Buffer,
    style: RopeStyle,
    n_heads: u32,
    head_dim: u32,
) -> Result<(), KernelError> {
    let params = ctx.uniform_buffer(
        label,
        &RopeParams { n_heads, head_dim, rot_dim: table.rot_dim, max_positions: table.max_positions },
    );
    let mut defines = base_defines();
    if style == RopeStyle::Neox {
        defines.push(Define::flag("NEOX"));
    }
    let dispatch = make_dispatch(
        ctx,
        label,
        "rope.wgsl",
        "main",
        &defines,
        &[x, &table.buffer, step, &params],
        threads_per_token(ctx, n_heads * table.rot_dim / 2),
    )?;
    ops.push(dispatch);
    Ok(())
}
