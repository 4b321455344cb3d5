//! One dispatch for everything between the q/k/v projections and attention: Gemma's per-head
//! q/k RMSNorm, RoPE of q and k, and the KV-cache store — five dispatches in the unfused path.

use bytemuck::{Pod, Zeroable};

use super::{attention::KvCache, base_defines, make_dispatch, rope::RopeStyle, rope::RopeTable, workgroups_per_token, KernelError};
use crate::gpu::{Define, GpuContext, OpList};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct QkParams {
    n_heads: u32,
    n_kv_heads: u32,
    rot_dim: u32,
    max_positions: u32,
    cache_len: u32,
    eps: f32,
    _pad: [u32; 2],
}

/// Per-head RMSNorm weights of q and k (Gemma 3) and their epsilon.
#[derive(Clone, Copy)]
pub struct QkNorms<'a> {
    pub q: &'a wgpu::Buffer,
    pub k: &'a wgpu::Buffer,
    pub eps: f32,
}

/// The step's projections and where their rotated keys and values go.
pub struct QkvRows<'a> {
    /// [n_tokens, n_heads, head_dim], normed and rotated in place.
    pub q: &'a wgpu::Buffer,
    /// [n_tokens, n_kv_heads, head_dim], read only: the rotated keys go to the cache.
    pub k: &'a wgpu::Buffer,
    pub v: &'a wgpu::Buffer,
}

/// Records norm (when `norms`) and RoPE of q and k, and stores k and v in `cache` at the
/// step's positions; the result equals `record_rms_norm` + `record_rope` + `record_kv_store`.
#[allow(clippy::too_many_arguments)]
pub fn record_qk_rope_store(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    rows: QkvRows,
    norms: Option<QkNorms>,
    table: &RopeTable,
    style: RopeStyle,
    cache: &KvCache,
    step: &wgpu::Buffer,
    n_heads: u32,
) -> Result<(), KernelError> {
    if table.rot_dim > cache.head_dim || !table.rot_dim.is_multiple_of(2) {
        return Err(KernelError::InvalidShape { kernel: "qk_rope_store", message: format!("rotation over {} of {} dimensions", table.rot_dim, cache.head_dim) });
    }
    let params = ctx.uniform_buffer(label, &QkParams {
        n_heads,
        n_kv_heads: cache.n_kv_heads,
        rot_dim: table.rot_dim,
        max_positions: table.max_positions,
        cache_len: cache.cache_len,
        eps: norms.map_or(0.0, |n| n.eps),
        _pad: [0; 2],
    });
    let mut defines = base_defines();
    defines.push(Define::u32("HEAD_DIM", cache.head_dim));
    if cache.f16 {
        defines.push(Define::flag("F16"));
    }
    if style == RopeStyle::Neox {
        defines.push(Define::flag("NEOX"));
    }
    let mut buffers = vec![rows.q, rows.k, rows.v, &cache.k, &cache.v, &table.buffer, step, &params];
    if let Some(norms) = norms {
        defines.push(Define::flag("QK_NORM"));
        buffers.extend([norms.q, norms.k]);
    }
    let workgroups = workgroups_per_token(ctx, n_heads + cache.n_kv_heads);
    ops.push(make_dispatch(ctx, label, "fused_qk_rope_store.wgsl", "main", &defines, &buffers, workgroups)?);
    Ok(())
}
