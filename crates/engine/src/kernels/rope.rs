use bytemuck::{Pod, Zeroable};
use serde::Serialize;

use super::{base_defines, check_width, make_dispatch, threads_per_token, KernelError};
use crate::gpu::{Define, GpuContext, GpuTensor, OpList, StepBuffer};

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

/// How a RoPE table's angles are made: θ(p, i) = (p / linear_scale) · base^(-2i/rot_dim) / divisors[i],
/// and both cos θ and sin θ are multiplied by `attention_factor`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RopeFrequencies {
    pub theta_base: f32,
    /// Positions are divided by it (linear scaling; 1 for none).
    pub linear_scale: f32,
    /// Per-pair frequency divisors, rot_dim/2 of them (Llama 3.1's `rope_freqs`, Phi 3's
    /// LongRoPE factors); `None` for all ones.
    pub divisors: Option<Vec<f32>>,
    /// Multiplies cos and sin, so it scales q·k by its square (LongRoPE's attention factor).
    pub attention_factor: f32,
}

impl RopeFrequencies {
    /// Plain RoPE with base `theta_base`.
    pub fn plain(theta_base: f32) -> Self {
        Self { theta_base, linear_scale: 1.0, divisors: None, attention_factor: 1.0 }
    }

    /// The frequency of pair `i` for each pair of `rot_dim`, built by repeated f32
    /// multiplication as llama.cpp does.
    pub fn frequencies(&self, rot_dim: u32) -> Vec<f32> {
        let step_scale = self.theta_base.powf(-2.0 / rot_dim as f32);
        let mut frequencies = Vec::with_capacity(rot_dim as usize / 2);
        let mut frequency = 1.0 / self.linear_scale;
        for pair in 0..rot_dim as usize / 2 {
            let divisor = self.divisors.as_ref().and_then(|d| d.get(pair)).copied().unwrap_or(1.0);
            frequencies.push(frequency / divisor);
            frequency *= step_scale;
        }
        frequencies
    }
}

/// (cos θ, sin θ)·attention_factor for every position below `max_positions` and every pair of
/// `rot_dim` (see `RopeFrequencies`).
pub fn rope_table(rope: &RopeFrequencies, rot_dim: u32, max_positions: u32) -> Vec<[f32; 2]> {
    let frequencies = rope.frequencies(rot_dim);
    let factor = rope.attention_factor;
    let mut table = Vec::with_capacity(max_positions as usize * frequencies.len());
    for pos in 0..max_positions {
        for &f in &frequencies {
            let theta = pos as f32 * f;
            table.push([theta.cos() * factor, theta.sin() * factor]);
        }
    }
    table
}

/// The GPU copy of a `rope_table`, shared by every layer with the same frequencies.
pub struct RopeTable {
    pub buffer: wgpu::Buffer,
    pub rot_dim: u32,
    pub max_positions: u32,
}

impl RopeTable {
    /// Bytes of the table for `max_positions` positions: a (cos, sin) f32 pair per rotated pair.
    pub fn bytes(rot_dim: u32, max_positions: u32) -> u64 {
        u64::from(max_positions) * u64::from(rot_dim / 2) * 8
    }

    pub fn new(ctx: &GpuContext, rope: &RopeFrequencies, rot_dim: u32, max_positions: u32) -> Self {
        let table = rope_table(rope, rot_dim, max_positions);
        let buffer = ctx.storage_buffer("rope table", bytemuck::cast_slice(&table));
        Self { buffer, rot_dim, max_positions }
    }
}

/// How a tensor's rows split into heads for RoPE: `head_dim` values each, rotated by `style`.
#[derive(Debug, Clone, Copy)]
pub struct RopeHeads {
    pub head_dim: u32,
    pub style: RopeStyle,
}

/// Records RoPE in place on `x`, each row (token) `x.width() / head_dim` heads.
pub fn record_rope(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    x: &GpuTensor,
    table: &RopeTable,
    step: &StepBuffer,
    heads: RopeHeads,
) -> Result<(), KernelError> {
    let RopeHeads { head_dim, style } = heads;
    if head_dim == 0 || !x.width().is_multiple_of(head_dim) || table.rot_dim > head_dim {
        return Err(KernelError::InvalidShape {
            kernel: "rope",
            message: format!("{} is not heads of {head_dim} values rotating {}", x.describe(), table.rot_dim),
        });
    }
    check_width("rope", "x", x, x.width())?;
    let n_heads = x.width() / head_dim;
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
        &[x.buffer(), &table.buffer, step.buffer(), &params],
        threads_per_token(ctx, n_heads * table.rot_dim / 2),
    )?;
    ops.push(dispatch);
    Ok(())
}
