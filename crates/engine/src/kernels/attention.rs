use bytemuck::{Pod, Zeroable};

use super::{base_defines, make_dispatch, threads_per_token, workgroups_per_token, KernelError};
use crate::gpu::{Define, GpuContext, OpList};

/// One layer's keys and values: [cache_len, n_kv_heads, head_dim], f16 where the adapter has
/// shader-f16, else f32. Position p lives in slot p mod cache_len, so a sliding-window layer
/// only keeps its window (plus one batch, which a prefill step writes before it reads).
pub struct KvCache {
    pub k: wgpu::Buffer,
    pub v: wgpu::Buffer,
    pub cache_len: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub f16: bool,
}

impl KvCache {
    pub fn new(ctx: &GpuContext, label: &str, cache_len: u32, n_kv_heads: u32, head_dim: u32) -> Self {
        let f16 = ctx.caps.shader_f16;
        let bytes = u64::from(cache_len) * u64::from(n_kv_heads) * u64::from(head_dim) * if f16 { 2 } else { 4 };
        Self {
            k: ctx.zeroed_storage(&format!("{label} k"), bytes),
            v: ctx.zeroed_storage(&format!("{label} v"), bytes),
            cache_len,
            n_kv_heads,
            head_dim,
            f16,
        }
    }

    pub fn size_bytes(&self) -> u64 {
        self.k.size() + self.v.size()
    }

    fn defines(&self) -> Vec<Define> {
        let mut defines = base_defines();
        if self.f16 {
            defines.push(Define::flag("F16"));
        }
        defines
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct KvStoreParams {
    row_len: u32,
    cache_len: u32,
    _pad: [u32; 2],
}

/// Records copying this step's `keys` and `values` ([n_tokens, n_kv_heads·head_dim]) into the cache.
pub fn record_kv_store(ctx: &GpuContext, ops: &mut OpList, label: &str, cache: &KvCache, keys: &wgpu::Buffer, values: &wgpu::Buffer, step: &wgpu::Buffer) -> Result<(), KernelError> {
    let row_len = cache.n_kv_heads * cache.head_dim;
    let params = ctx.uniform_buffer(label, &KvStoreParams { row_len, cache_len: cache.cache_len, _pad: [0; 2] });
    let defines = cache.defines();
    for (source, target, which) in [(keys, &cache.k, "k"), (values, &cache.v, "v")] {
        let name = format!("{label} {which}");
        ops.push(make_dispatch(ctx, &name, "kv_store.wgsl", "main", &defines, &[source, target, step, &params], threads_per_token(ctx, row_len))?);
    }
    Ok(())
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct AttentionParams {
    n_heads: u32,
    n_kv_heads: u32,
    cache_len: u32,
    window: u32,
    scale: f32,
    _pad: [u32; 3],
}

/// Records causal attention of `queries` [n_tokens, n_heads, head_dim] over the cache into `output`.
/// `window` 0 means full attention; otherwise a query at p sees keys p - window + 1 ..= p.
#[allow(clippy::too_many_arguments)]
pub fn record_attention(
    ctx: &GpuContext,
    ops: &mut OpList,
    label: &str,
    cache: &KvCache,
    queries: &wgpu::Buffer,
    output: &wgpu::Buffer,
    step: &wgpu::Buffer,
    n_heads: u32,
    window: u32,
    scale: f32,
) -> Result<(), KernelError> {
    if n_heads % cache.n_kv_heads != 0 {
        return Err(KernelError::InvalidShape { kernel: "attention", message: format!("{n_heads} query heads are not a multiple of {} kv heads", cache.n_kv_heads) });
    }
    let params = ctx.uniform_buffer(label, &AttentionParams { n_heads, n_kv_heads: cache.n_kv_heads, cache_len: cache.cache_len, window, scale, _pad: [0; 3] });
    let mut defines = cache.defines();
    defines.push(Define::u32("HEAD_DIM", cache.head_dim));
    ops.push(make_dispatch(ctx, label, "attention.wgsl", "main", &defines, &[queries, &cache.k, &cache.v, output, step, &params], workgroups_per_token(ctx, n_heads))?);
    Ok(())
}
