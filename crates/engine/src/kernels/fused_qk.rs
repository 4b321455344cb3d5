//! One dispatch for everything between the q/k/v projections and attention: Gemma's per-head
//! q/k RMSNorm, RoPE of q and k, and the KV-cache store — five dispatches in the unfused path.

use bytemuck::{Pod, Zeroable};

use super::{
    attention::KvCache, base_defines, check_same_rows, check_width, make_numbered_dispatch, rope::RopeStyle,
    rope::RopeTable, workgroups_per_token, KernelError,
};
use crate::gpu::{Define, GpuContext, GpuTensor, OpList, StepBuffer};

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

#[cfg(test)]
#[test]
fn qk_params_match_wgsl() {
    super::wgsl_layout::assert_wgsl_layout!(QkParams, "fused_qk_rope_store.wgsl", "Params", { n_heads: u32, n_kv_heads: u32, rot_dim: u32, max_positions: u32, cache_len: u32, eps: f32 });
}

/// Per-head RMSNorm weights of q and k (Gemma 3) and their epsilon.
#[derive(Clone, Copy)]
pub struct QkNorms<'a> {
    pub q: &'a GpuTensor,
    pub k: &'a GpuTensor,
    pub eps: f32,
}

/// The step's projections and where their rotated keys and values go.
#[derive(Clone, Copy)]
pub struct QkvRows<'a> {
    /// Rows of n_heads · head_dim, normed and rotated in place.
    pub q: &'a GpuTensor,
    /// Rows of n_kv_heads · head_dim, read only: the rotated keys go to the cache.
    pub k: &'a GpuTensor,
    pub v: &'a GpuTensor,
}

/// The q/k step between the projections and attention: the rows, Gemma's per-head norms, and
/// the RoPE table and pair style.
#[derive(Clone, Copy)]
pub struct QkStep<'a> {
    pub rows: QkvRows<'a>,
    pub norms: Option<QkNorms<'a>>,
    pub table: &'a RopeTable,
    pub style: RopeStyle,
    /// q's, k's and v's biases end to end, added before the norms and rotation (Qwen 2's in
    /// prefill; decode's products add them as they store their rows).
    pub bias: Option<&'a GpuTensor>,
}

impl QkStep<'_> {
    /// Errors unless the rows are whole heads of `cache` (q any number of them, k and v the
    /// cache's), the norms one head wide and the rotation fits a head. Returns the query heads.
    pub(crate) fn check(&self, kernel: &'static str, cache: &KvCache) -> Result<u32, KernelError> {
        let head_dim = cache.head_dim;
        if self.table.rot_dim > head_dim || !self.table.rot_dim.is_multiple_of(2) {
            return Err(KernelError::InvalidShape {
                kernel,
                message: format!("rotation over {} of {} dimensions", self.table.rot_dim, head_dim),
            });
        }
        let QkvRows { q, k, v } = self.rows;
        if head_dim == 0 || q.width() == 0 || !q.width().is_multiple_of(head_dim) {
            return Err(KernelError::InvalidShape {
                kernel,
                message: format!("q {} is not heads of {head_dim} values", q.describe()),
            });
        }
        check_width(kernel, "q", q, q.width())?;
        check_width(kernel, "k", k, cache.n_kv_heads * head_dim)?;
        check_width(kernel, "v", v, cache.n_kv_heads * head_dim)?;
        check_same_rows(kernel, ("q", q), ("k", k))?;
        check_same_rows(kernel, ("q", q), ("v", v))?;
        if let Some(norms) = &self.norms {
            check_width(kernel, "q norm", norms.q, head_dim)?;
            check_width(kernel, "k norm", norms.k, head_dim)?;
        }
        if let Some(bias) = self.bias {
            check_width(kernel, "q/k/v bias", bias, q.width() + 2 * cache.n_kv_heads * head_dim)?;
        }
        Ok(q.width() / head_dim)
    }

    /// The defines of qk_rope.wgsl for this step.
    pub(crate) fn defines(&self) -> Vec<Define> {
        let mut defines = Vec::new();
        if self.style == RopeStyle::Neox {
            defines.push(Define::flag("NEOX"));
        }
        if self.norms.is_some() {
            defines.push(Define::flag("QK_NORM"));
        }
        if self.bias.is_some() {
            defines.push(Define::flag("QKV_BIAS"));
        }
        defines
    }

    /// The buffers qk_rope.wgsl reads after the including shader's own: the table, then the
    /// norm weights (QK_NORM).
    pub(crate) fn table_and_norms(&self) -> Vec<&wgpu::Buffer> {
        let mut buffers = vec![&self.table.buffer];
        if let Some(norms) = &self.norms {
            buffers.extend([norms.q.buffer(), norms.k.buffer()]);
        }
        buffers
    }

    pub(crate) fn eps(&self) -> f32 {
        self.norms.map_or(0.0, |n| n.eps)
    }
}

/// Records the biases (when `qk.bias`), norm (when `qk.norms`) and RoPE of q and k, and stores
/// k and v in `cache` at the step's positions; the result equals adding the biases to the rows,
/// then `record_rms_norm` + `record_rope` + `record_kv_store`.
pub fn record_qk_rope_store(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    qk: &QkStep,
    cache: &KvCache,
    step: &StepBuffer,
) -> Result<(), KernelError> {
    let n_heads = qk.check("qk_rope_store", cache)?;
    let params = ctx.uniform_buffer(
        label,
        &QkParams {
            n_heads,
            n_kv_heads: cache.n_kv_heads,
            rot_dim: qk.table.rot_dim,
            max_positions: qk.table.max_positions,
            cache_len: cache.cache_len,
            eps: qk.eps(),
            _pad: [0; 2],
        },
    );
    let mut defines = base_defines();
    defines.push(Define::u32("HEAD_DIM", cache.head_dim));
    if cache.f16 {
        defines.push(Define::flag("F16"));
    }
    defines.extend(qk.defines());
    let rows = qk.rows;
    let mut buffers =
        vec![rows.q.buffer(), rows.k.buffer(), rows.v.buffer(), &cache.k, &cache.v, step.buffer(), &params];
    buffers.extend(qk.table_and_norms());
    let mut numbered: Vec<(u32, &wgpu::Buffer)> = (0..).zip(buffers).collect();
    numbered.extend(qk.bias.map(|bias| (10, bias.buffer())));
    let workgroups = workgroups_per_token(ctx, n_heads + cache.n_kv_heads);
    ops.push(make_numbered_dispatch(
        ctx,
        label,
        "fused_qk_rope_store.wgsl",
        "main",
        &defines,
        &numbered,
        workgroups,
    )?);
    Ok(())
}
