//! Llama-family layer (Llama 2/3.x, SmolLM2): pre-norm attention with grouped-query heads and
//! interleaved RoPE (GGUF stores Q/K permuted for it), then a SiLU-gated feed-forward block.

use super::{
    forward::{LayerContext, LayerEnds},
    LayerWeights,
};
use crate::{
    gpu::OpList,
    kernels::{
        attention::KvCache,
        elementwise::Activation,
        fused_qk::QkStep,
        rope::{RopeStyle, RopeTable},
        KernelError,
    },
};

/// Records one layer; `acts.normed` holds the attention pre-norm of `acts.hidden` on entry,
/// and holds `next_norm` of the updated hidden state on exit.
pub(super) fn record_layer<'a>(
    lc: &LayerContext<'a>,
    ops: &mut OpList,
    index: u32,
    w: &'a LayerWeights,
    cache: &KvCache,
    rope: &RopeTable,
    next_norm: &'a wgpu::Buffer,
) -> Result<(), KernelError> {
    let acts = lc.acts;
    let name = |what: &str| format!("blk.{index}.{what}");

    lc.projections(ops, &w.qkv, &[&acts.q, &acts.k, &acts.v])?;
    let qk = QkStep { rows: lc.qkv_rows(), norms: None, table: rope, style: RopeStyle::Interleaved };
    lc.attention(ops, &name("rope_store"), &name("attention"), &qk, cache, 0)?;
    lc.linear(ops, &name("attn_output"), &w.o, &acts.attention, &acts.projection)?;
    lc.residual_norm(
        ops,
        &name("attn_residual+ffn_norm"),
        LayerEnds { post_norm: None, next_norm: &w.ffn_norm },
    )?;

    lc.gated_ffn_input(ops, &name("ffn_silu"), &w.gate_up, Activation::Silu)?;
    lc.linear(ops, &name("ffn_down"), &w.down, &acts.gate, &acts.projection)?;
    lc.residual_norm(ops, &name("ffn_residual+next_norm"), LayerEnds { post_norm: None, next_norm })
}
