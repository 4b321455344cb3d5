use std::cell::{Cell, RefCell};

use super::{
    weights::{LayerWeights, QkvBias},
    ModelConfig, ModelError, ModelWeights,
};
use crate::{
    gpu::{Element, GpuContext, GpuMatrix, GpuTensor, OpList, StackedMatrix, StepBuffer},
    kernels::{
        attention::{record_attention, AttentionLayer, FlashPartials, FlashTile, KvCache},
        decode_attention::record_decode_attention_with_qk_step,
        elementwise::{record_copy_last_row, record_gated_activation, Activation},
        embedding::{record_embedding, ScaledTable},
        fused_norm::{record_residual_norm, ResidualNorms, ResidualRows},
        fused_qk::{record_qk_rope_store, QkStep, QkvRows},
        matmul::{
            joined_label, normed_input_pays, record_gated_matmul, record_gated_matvec, record_matmul_parts,
            record_matmul_rows, record_matvec_of, record_quantize_q8, record_stacked_matvec, takes_q8_input,
            MatrixRows, MatvecInput, NormedInput, PartProduct, ProductOutput, Q8Vector, ResidualStream,
            MAX_K_SPLITS,
        },
        matmul_half::{
            runs_on as half_products_run_on, HalfOperands, HalfShape, MIN_TOKENS as HALF_MIN_TOKENS,
        },
        norm::{record_rms_norm, NormOutput, RmsNorm},
        rope::RopeTable,
        KernelError,
    },
};

/// Decode runs one token through matrix-vector kernels; prefill runs a batch through matmuls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardMode {
    Decode,
    Prefill,
}

/// The activation tensors of a session, a row per token for `max_tokens` tokens a step.
pub struct Activations {
    pub max_tokens: u32,
    /// u32 token ids of the step; the sampler writes the next decode input into row 0.
    pub tokens: GpuTensor,
    pub step: StepBuffer,
    pub hidden: GpuTensor,
    /// The residual stream's second tensor in decode, where matrix-vector kernels that fold
    /// in the residual connection write it while other workgroups still read `hidden`.
    pub hidden_alt: GpuTensor,
    pub normed: GpuTensor,
    pub q: GpuTensor,
    pub k: GpuTensor,
    pub v: GpuTensor,
    pub attention: GpuTensor,
    pub projection: GpuTensor,
    pub gate: GpuTensor,
    pub up: GpuTensor,
    /// Partial sums of split-K prefill matmuls (`matmul::record_matmul_rows`), one flat row.
    pub matmul_splits: GpuTensor,
    /// The final-normed hidden state of the step's last token.
    pub last_normed: GpuTensor,
    /// Logits of the step's last token.
    pub logits: GpuTensor,
    /// Decode inputs in Q8 form, one per width a product reads (hidden, q, feed-forward), for
    /// the weight types whose products take it (`matmul::takes_q8_input`).
    pub q8_inputs: Vec<Q8Vector>,
    /// The f16 operands of prefill products on tensor cores, where the session takes them
    /// (`takes_half_operands`).
    pub half_operands: Option<HalfOperands>,
    /// The partials of the tensor-core prefill attention's key splits, where the session takes
    /// them (`takes_flash_partials`).
    pub flash_partials: Option<FlashPartials>,
}

/// Bytes of each activation buffer: one source for the allocation and the memory estimate.
pub struct ActivationSizes {
    tokens: u64,
    hidden: u64,
    hidden_alt: u64,
    normed: u64,
    q: u64,
    kv: u64,
    attention: u64,
    projection: u64,
    ffn: u64,
    matmul_splits: u64,
    last_normed: u64,
    logits: u64,
    q8_inputs: u64,
    half_operands: u64,
    flash_partials: u64,
}

impl ActivationSizes {
    /// `half_products`: the adapter runs `matmul_half`'s products (`matmul_half::runs_on`).
    pub fn new(config: &ModelConfig, max_tokens: u32, max_storage_binding: u64, half_products: bool) -> Self {
        let floats = |per_token: u32| u64::from(max_tokens) * u64::from(per_token) * 4;
        let q_dim = config.n_heads * config.head_dim;
        Self {
            tokens: u64::from(max_tokens) * 4,
            hidden: floats(config.hidden),
            hidden_alt: floats(config.hidden),
            normed: floats(config.hidden),
            q: floats(q_dim),
            kv: floats(config.n_kv_heads * config.head_dim),
            attention: floats(q_dim),
            projection: floats(config.hidden),
            ffn: floats(config.ffn_hidden),
            // Enough for the narrow products that need splitting (rows up to the hidden or
            // q width); wider ones have workgroups enough, or split less.
            matmul_splits: (floats(config.hidden.max(q_dim)) * u64::from(MAX_K_SPLITS))
                .min(max_storage_binding & !3),
            last_normed: u64::from(config.hidden) * 4,
            logits: u64::from(config.vocab_size) * 4,
            q8_inputs: q8_widths(config).iter().map(|&width| Q8Vector::bytes(width)).sum(),
            half_operands: match takes_half_operands(config, max_tokens, half_products) {
                true => HalfOperands::bytes(max_tokens, half_shape(config), max_storage_binding),
                false => 0,
            },
            flash_partials: match takes_flash_partials(config, half_products) {
                true => {
                    FlashPartials::bytes(max_tokens, config.n_heads, config.head_dim, max_storage_binding)
                }
                false => 0,
            },
        }
    }

    pub fn total(&self) -> u64 {
        StepBuffer::BYTES
            + self.tokens
            + self.hidden
            + self.hidden_alt
            + self.normed
            + self.q
            + 2 * self.kv
            + self.attention
            + self.projection
            + 2 * self.ffn
            + self.matmul_splits
            + self.last_normed
            + self.logits
            + self.q8_inputs
            + self.half_operands
            + self.flash_partials
    }
}

fn matrices(stacks: &[StackedMatrix]) -> Vec<&GpuMatrix> {
    stacks.iter().map(|stack| &stack.matrix).collect()
}

/// Weight bytes below which the products of a decode input read it as f32 rather than have it
/// quantized by a dispatch of its own. The feed-forward's gated output into ffn_down is the
/// input this decides: on an H200 (`bench/results/2026-11-30-h200-q8-down-input/`) quantizing it
/// for every size took tg128 at depth 0 from 477 to 497 tokens/s on Llama 3.2 3B all IQ4_XS
/// (13 MiB of ffn_down), 510 to 531 on its Q4_K_M mix, 382 to 398 on Qwen3 4B, 1,059 to 1,083 on
/// Llama 3.2 1B and 737 to 741 on Gemma 3 1B (its ffn_down 4.3-6.3 MiB), where a 16 MiB bound left
/// them f32. Smaller matrices than Gemma 3 1B's were not measured and keep the f32 input.
const MIN_QUANTIZED_WEIGHT_BYTES: u64 = 4 << 20;

/// Storage buffers a decode product binds at most with a bias: weights, input, three outputs,
/// the bias, and a normed input's norm, residual stream in and out and post-norm.
const MATVEC_BIAS_BUFFERS: u32 = 10;

/// The widths of the decode inputs kept in Q8 form: those of whole 32-value blocks.
fn q8_widths(config: &ModelConfig) -> Vec<u32> {
    let mut widths = vec![config.hidden, config.n_heads * config.head_dim, config.ffn_hidden];
    widths.sort_unstable();
    widths.dedup();
    widths.retain(|width| width.is_multiple_of(32));
    widths
}

/// What the f16 prefill products of a layer must hold: their widest input (the hidden state,
/// the attention output or the feed-forward activation) and largest matrix part.
/// Whether a session of steps up to `max_tokens` holds f16 operands for its prefill products:
/// where the adapter runs them (`half_products`), a step can be large enough to use them
/// (`matmul_half::MIN_TOKENS`) and the model's products are (`HalfShape::pays_off`).
fn takes_half_operands(config: &ModelConfig, max_tokens: u32, half_products: bool) -> bool {
    half_products && max_tokens >= HALF_MIN_TOKENS && half_shape(config).pays_off()
}

/// Whether a session keeps partials for the tensor-core prefill attention's key splits: where
/// the adapter runs the f16 products (cooperative matrices, hence f16 caches, and room for the
/// attention's tiles) and the heads suit the kernel (`FlashTile::suits`).
fn takes_flash_partials(config: &ModelConfig, half_products: bool) -> bool {
    half_products && FlashTile::suits(config.head_dim)
}

fn half_shape(config: &ModelConfig) -> HalfShape {
    let q_dim = config.n_heads * config.head_dim;
    let qkv_rows = q_dim + 2 * config.n_kv_heads * config.head_dim;
    HalfShape {
        max_row_len: config.hidden.max(q_dim).max(config.ffn_hidden),
        // The stacked q, k and v and the gated product's gate and up rows.
        max_matrix_values: u64::from(config.hidden) * u64::from(qkv_rows.max(2 * config.ffn_hidden)),
    }
}

impl Activations {
    fn new(ctx: &GpuContext, config: &ModelConfig, max_tokens: u32) -> Self {
        let sizes = ActivationSizes::new(
            config,
            max_tokens,
            ctx.caps.max_storage_binding,
            half_products_run_on(&ctx.caps),
        );
        let rows = |label: &str, width: u32| GpuTensor::zeroed(ctx, label, max_tokens, width, Element::F32);
        let row = |label: &str, width: u32| GpuTensor::zeroed(ctx, label, 1, width, Element::F32);
        let q_dim = config.n_heads * config.head_dim;
        let kv_dim = config.n_kv_heads * config.head_dim;
        Self {
            max_tokens,
            tokens: GpuTensor::zeroed(ctx, "tokens", max_tokens, 1, Element::U32),
            step: StepBuffer::new(ctx),
            hidden: rows("hidden", config.hidden),
            hidden_alt: rows("hidden (alternate)", config.hidden),
            normed: rows("normed", config.hidden),
            q: rows("q", q_dim),
            k: rows("k", kv_dim),
            v: rows("v", kv_dim),
            attention: rows("attention", q_dim),
            projection: rows("projection", config.hidden),
            gate: rows("gate", config.ffn_hidden),
            up: rows("up", config.ffn_hidden),
            matmul_splits: row("matmul splits", (sizes.matmul_splits / 4) as u32),
            last_normed: row("last normed", config.hidden),
            logits: row("logits", config.vocab_size),
            q8_inputs: q8_widths(config)
                .into_iter()
                .map(|width| Q8Vector::new(ctx, "decode input", width))
                .collect(),
            half_operands: takes_half_operands(config, max_tokens, half_products_run_on(&ctx.caps))
                .then(|| HalfOperands::new(ctx, max_tokens, half_shape(config))),
            flash_partials: takes_flash_partials(config, half_products_run_on(&ctx.caps))
                .then(|| FlashPartials::new(ctx, max_tokens, config.n_heads, config.head_dim))
                .flatten(),
        }
    }

    /// Where a prefill product into `output` goes, with the scratch it may use.
    fn product_output<'t>(&'t self, output: &'t GpuTensor) -> ProductOutput<'t> {
        ProductOutput {
            output,
            split_scratch: Some(&self.matmul_splits),
            half_operands: self.half_operands.as_ref(),
        }
    }

    /// The Q8 form of a decode input to `w`, where its type takes one and one of that width is kept.
    fn q8_input_for(&self, w: &GpuMatrix) -> Option<&Q8Vector> {
        if !takes_q8_input(w.ggml_type) {
            return None;
        }
        self.q8_input_of_width(w.row_len)
    }

    /// The Q8 form kept for decode inputs of `width` values, if any.
    fn q8_input_of_width(&self, width: u32) -> Option<&Q8Vector> {
        self.q8_inputs.iter().find(|q8| q8.len == width)
    }

    pub fn size_bytes(&self) -> u64 {
        let step = self.step.buffer().size();
        step + [
            &self.tokens,
            &self.hidden,
            &self.hidden_alt,
            &self.normed,
            &self.q,
            &self.k,
            &self.v,
            &self.attention,
            &self.projection,
            &self.gate,
            &self.up,
            &self.matmul_splits,
            &self.last_normed,
            &self.logits,
        ]
        .iter()
        .map(|tensor| tensor.size_bytes())
        .sum::<u64>()
            + self.q8_inputs.iter().map(|q8| q8.words.size_bytes() + q8.scales.size_bytes()).sum::<u64>()
            + self.half_operands.as_ref().map_or(0, HalfOperands::size_bytes)
            + self.flash_partials.as_ref().map_or(0, FlashPartials::size_bytes)
    }
}

/// Everything a layer body needs to record its kernels.
pub(super) struct LayerContext<'a> {
    pub ctx: &'a GpuContext,
    pub config: &'a ModelConfig,
    pub acts: &'a Activations,
    pub mode: ForwardMode,
    /// Decode: the norm that makes `acts.normed`, left to the matrix-vector kernels that read
    /// it (each workgroup normalizes for itself) so that it costs no dispatch of its own.
    pending_norm: RefCell<Option<PendingNorm<'a>>>,
    /// Decode: the residual stream is in `acts.hidden_alt` rather than `acts.hidden`.
    stream_in_alt: Cell<bool>,
    /// Decode: the activation whose Q8 form each of `acts.q8_inputs` holds, as the last kernel
    /// to write it left it (a quantization, the residual norm, the attention merge), so the
    /// products of that activation need no quantization of their own. Only `acts.normed` and
    /// `acts.attention` are noted: every decode write of them goes through `wrote`.
    q8_sources: Vec<Cell<Option<*const GpuTensor>>>,
}

/// An RMSNorm into `acts.normed` not recorded yet: of the residual stream, after `block_out`
/// (post-normed by `post_norm`, Gemma) is added to it where there is one.
struct PendingNorm<'a> {
    label: String,
    block_out: Option<&'a GpuTensor>,
    post_norm: Option<&'a GpuTensor>,
    norm: &'a GpuTensor,
}

impl<'a> LayerContext<'a> {
    pub fn new(
        ctx: &'a GpuContext,
        config: &'a ModelConfig,
        acts: &'a Activations,
        mode: ForwardMode,
    ) -> Self {
        Self {
            ctx,
            config,
            acts,
            mode,
            pending_norm: RefCell::new(None),
            stream_in_alt: Cell::new(false),
            q8_sources: acts.q8_inputs.iter().map(|_| Cell::new(None)).collect(),
        }
    }

    /// Where `q8` (one of `acts.q8_inputs`) notes its source.
    fn q8_source(&self, q8: &Q8Vector) -> Option<&Cell<Option<*const GpuTensor>>> {
        let index = self.acts.q8_inputs.iter().position(|kept| std::ptr::eq(kept, q8))?;
        self.q8_sources.get(index)
    }

    /// Notes that `tensor` was written, its Q8 form into `q8` where one was: any Q8 form of it
    /// written before is stale.
    fn wrote(&self, tensor: &GpuTensor, q8: Option<&Q8Vector>) {
        let tensor: *const GpuTensor = tensor;
        for source in &self.q8_sources {
            if source.get() == Some(tensor) {
                source.set(None);
            }
        }
        if let Some(source) = q8.and_then(|q8| self.q8_source(q8)) {
            let noted = std::ptr::eq(tensor, &self.acts.normed) || std::ptr::eq(tensor, &self.acts.attention);
            source.set(noted.then_some(tensor));
        }
    }

    /// `output = w · input` for every token of the step.
    pub fn linear(
        &self,
        ops: &mut OpList,
        label: &str,
        w: &GpuMatrix,
        input: &GpuTensor,
        output: &GpuTensor,
    ) -> Result<(), KernelError> {
        match self.mode {
            ForwardMode::Decode => {
                let input = self.decode_input(ops, label, &[w], input)?;
                record_matvec_of(self.ctx, ops, label, w, input, output)
            }
            ForwardMode::Prefill => record_matmul_rows(
                self.ctx,
                ops,
                label,
                MatrixRows { matrix: w, rows: 0..w.rows },
                input,
                self.acts.product_output(output),
                &self.acts.step,
            ),
        }
    }

    /// The decode input `vector` as the products of `matrices` read it: in Q8 form where they
    /// all take it and it is at hand (the norm wrote it) or worth a dispatch to make (recorded
    /// here, labelled after the products), else as is.
    fn decode_input<'v>(
        &'v self,
        ops: &mut OpList,
        label: &str,
        matrices: &[&GpuMatrix],
        vector: &'v GpuTensor,
    ) -> Result<MatvecInput<'v>, KernelError> {
        let Some(q8) = self.q8_input_for(matrices) else {
            return Ok(MatvecInput::Vector(vector));
        };
        if self.q8_source(q8).is_some_and(|source| source.get() == Some(std::ptr::from_ref(vector))) {
            return Ok(MatvecInput::Q8(q8));
        }
        let weight_bytes: u64 = matrices.iter().map(|w| w.size_bytes()).sum();
        if weight_bytes < MIN_QUANTIZED_WEIGHT_BYTES {
            return Ok(MatvecInput::Vector(vector));
        }
        record_quantize_q8(self.ctx, ops, &format!("{label} q8 input"), vector, q8)?;
        self.wrote(vector, Some(q8));
        Ok(MatvecInput::Q8(q8))
    }

    /// The Q8 input vector the decode products of `matrices` can all read, if any.
    fn q8_input_for(&self, matrices: &[&GpuMatrix]) -> Option<&'a Q8Vector> {
        let acts = self.acts;
        let q8 = matrices.iter().map(|w| acts.q8_input_for(w)).collect::<Option<Vec<_>>>()?;
        q8.first().copied()
    }

    /// Every part of `stacks` applied to `acts.normed`, part i (counting through the stacks)
    /// into `outputs[i]`: one dispatch per stack in decode, normalizing its input itself where
    /// it can, one matmul per part in prefill.
    pub fn projections(
        &self,
        ops: &mut OpList,
        stacks: &[StackedMatrix],
        outputs: &[&GpuTensor],
    ) -> Result<(), KernelError> {
        self.projections_with_biases(ops, stacks, outputs, None)
    }

    /// The q/k/v projections of `acts.normed` into `acts.q`, `k` and `v`, plus `bias` where
    /// the layer has one, with no dispatch of its own: in decode the products add it as they
    /// store their rows where the adapter binds the buffer that takes; else the q/k step does,
    /// and its end-to-end form is returned for `QkStep::bias`.
    pub fn qkv_projections<'w>(
        &self,
        ops: &mut OpList,
        stacks: &[StackedMatrix],
        bias: Option<&'w QkvBias>,
    ) -> Result<Option<&'w GpuTensor>, KernelError> {
        let acts = self.acts;
        let outputs = [&acts.q, &acts.k, &acts.v];
        match (self.mode, bias) {
            (ForwardMode::Decode, Some(bias))
                if self.ctx.caps.max_storage_buffers_per_stage >= MATVEC_BIAS_BUFFERS =>
            {
                self.projections_with_biases(ops, stacks, &outputs, Some(&bias.stacks))?;
                Ok(None)
            }
            _ => {
                self.projections(ops, stacks, &outputs)?;
                Ok(bias.map(|bias| &bias.qkv))
            }
        }
    }

    /// The prefill products of every part of `stacks`, part i (counting through the stacks)
    /// into `outputs[i]`, all of one input.
    fn prefill_products<'s>(
        &self,
        stacks: &'s [StackedMatrix],
        outputs: &[&'s GpuTensor],
    ) -> Vec<PartProduct<'s>>
    where
        'a: 's,
    {
        let parts = stacks.iter().flat_map(|stack| (0..stack.parts.len()).map(move |index| (stack, index)));
        parts
            .zip(outputs)
            .map(|((stack, index), output)| PartProduct {
                label: part_label(&stack.parts[index].name),
                part: MatrixRows { matrix: &stack.matrix, rows: stack.part_rows(index) },
                output: self.acts.product_output(output),
            })
            .collect()
    }

    /// `projections`, the decode products of stack i adding `biases[i]` where given.
    fn projections_with_biases(
        &self,
        ops: &mut OpList,
        stacks: &[StackedMatrix],
        outputs: &[&GpuTensor],
        biases: Option<&[GpuTensor]>,
    ) -> Result<(), KernelError> {
        let (ctx, acts) = (self.ctx, self.acts);
        let fused = self.take_fusable_norm(ops, stacks, false)?;
        if self.mode == ForwardMode::Prefill {
            return record_matmul_parts(
                ctx,
                ops,
                &self.prefill_products(stacks, outputs),
                &acts.normed,
                &acts.step,
            );
        }
        // Without a fused norm one input (one quantization) serves every stack.
        let input = match (&fused, stacks.first()) {
            (None, Some(first)) => {
                Some(self.decode_input(ops, &stack_label(first), &matrices(stacks), &acts.normed)?)
            }
            _ => None,
        };
        let mut outputs = outputs.iter().copied();
        for (index, stack) in stacks.iter().enumerate() {
            let stack_outputs: Vec<&GpuTensor> = outputs.by_ref().take(stack.parts.len()).collect();
            let bias = biases.and_then(|biases| biases.get(index));
            if let Some(norm) = &fused {
                let label = fused_label(&norm.label, stack);
                let mut normed = self.normed_input(norm);
                // The first stack writes the stream; the others then share no written buffer
                // with it, so the GPU may run them without a barrier between.
                if index > 0 {
                    if let Some(residual) = normed.residual.as_mut() {
                        residual.stream_out = None;
                    }
                }
                let input = MatvecInput::Normed(normed);
                record_stacked_matvec(ctx, ops, &label, stack, input, &stack_outputs, bias)?;
            } else if let Some(input) = input {
                record_stacked_matvec(ctx, ops, &stack_label(stack), stack, input, &stack_outputs, bias)?;
            }
        }
        self.consumed(fused);
        Ok(())
    }

    /// The gated feed-forward input `acts.gate = act(gate · normed) · (up · normed)`: one
    /// dispatch in decode where gate and up share a stack. `label` names the activation.
    pub fn gated_ffn_input(
        &self,
        ops: &mut OpList,
        label: &str,
        gate_up: &[StackedMatrix],
        activation: Activation,
    ) -> Result<(), KernelError> {
        let acts = self.acts;
        if let (ForwardMode::Decode, [stack]) = (self.mode, gate_up) {
            let activation_name = label.rsplit('.').next().unwrap_or(label);
            let fused = self.take_fusable_norm(ops, gate_up, true)?;
            let (matvec_label, input) = match &fused {
                Some(norm) => (fused_label(&norm.label, stack), MatvecInput::Normed(self.normed_input(norm))),
                None => {
                    let label = stack_label(stack);
                    let input = self.decode_input(ops, &label, &[&stack.matrix], &acts.normed)?;
                    (label, input)
                }
            };
            record_gated_matvec(
                self.ctx,
                ops,
                &format!("{matvec_label}+{activation_name}"),
                stack,
                input,
                &acts.gate,
                activation,
            )?;
            self.consumed(fused);
            return Ok(());
        }
        let products = self.prefill_products(gate_up, &[&acts.gate, &acts.up]);
        if let (ForwardMode::Prefill, Ok(products)) = (self.mode, <[PartProduct; 2]>::try_from(products)) {
            self.take_fusable_norm(ops, gate_up, true)?;
            return record_gated_matmul(
                self.ctx,
                ops,
                label,
                &products,
                &acts.normed,
                activation,
                &acts.step,
            );
        }
        self.projections(ops, gate_up, &[&acts.gate, &acts.up])?;
        record_gated_activation(self.ctx, ops, label, &acts.gate, &acts.up, &acts.step, activation)
    }

    /// The q/k step (`qk_label`) on `acts.q`/`k`/`v`, then attention over `cache` into
    /// `acts.attention`: split over the keys in decode, whose slices also do the q/k step.
    pub fn attention(
        &self,
        ops: &mut OpList,
        qk_label: &str,
        label: &str,
        qk: &QkStep,
        cache: &KvCache,
        window: u32,
    ) -> Result<(), KernelError> {
        let (acts, config) = (self.acts, self.config);
        // In decode the merge writes the output's Q8 form too where heads hold whole blocks.
        let output_q8 = match self.mode {
            ForwardMode::Decode if cache.head_dim.is_multiple_of(32) => {
                acts.q8_input_of_width(acts.attention.width())
            }
            _ => None,
        };
        let flash_partials = match self.mode {
            ForwardMode::Prefill => acts.flash_partials.as_ref(),
            ForwardMode::Decode => None,
        };
        let layer = AttentionLayer {
            cache,
            output: &acts.attention,
            output_q8,
            flash_partials,
            step: &acts.step,
            window,
            scale: config.attention_scale,
        };
        match self.mode {
            ForwardMode::Decode => {
                record_decode_attention_with_qk_step(self.ctx, ops, qk_label, label, qk, &layer)?
            }
            ForwardMode::Prefill => {
                record_qk_rope_store(self.ctx, ops, qk_label, qk, cache, &acts.step)?;
                record_attention(self.ctx, ops, label, &acts.q, &layer)?
            }
        }
        self.wrote(&acts.attention, output_q8);
        Ok(())
    }

    /// The step's q/k/v rows in `acts`.
    pub fn qkv_rows(&self) -> QkvRows<'a> {
        QkvRows { q: &self.acts.q, k: &self.acts.k, v: &self.acts.v }
    }

    /// Closes a block: adds `acts.projection` (post-normed, for Gemma) to the residual stream,
    /// then normalizes it into `acts.normed` with the next pre-norm.
    pub fn residual_norm(
        &self,
        ops: &mut OpList,
        label: &str,
        ends: LayerEnds<'a>,
    ) -> Result<(), KernelError> {
        self.norm_stream(
            ops,
            PendingNorm {
                label: label.to_string(),
                block_out: Some(&self.acts.projection),
                post_norm: ends.post_norm,
                norm: ends.next_norm,
            },
        )
    }

    /// `acts.normed = rmsnorm(stream)·norm` for the first layer.
    fn first_norm(&self, ops: &mut OpList, label: &str, norm: &'a GpuTensor) -> Result<(), KernelError> {
        self.norm_stream(
            ops,
            PendingNorm { label: label.to_string(), block_out: None, post_norm: None, norm },
        )
    }

    /// Records `norm` now in prefill; leaves it to the next matrix-vector kernels in decode.
    fn norm_stream(&self, ops: &mut OpList, norm: PendingNorm<'a>) -> Result<(), KernelError> {
        self.flush_norm(ops, &[])?;
        *self.pending_norm.borrow_mut() = Some(norm);
        match self.mode {
            ForwardMode::Decode => Ok(()),
            ForwardMode::Prefill => self.flush_norm(ops, &[]),
        }
    }

    /// Records the pending norm, if any, as a dispatch of its own; in decode it also writes
    /// its output in Q8 form where all of `readers`, the products that read it, take that.
    pub fn flush_norm(&self, ops: &mut OpList, readers: &[&GpuMatrix]) -> Result<(), KernelError> {
        let Some(norm) = self.pending_norm.borrow_mut().take() else {
            return Ok(());
        };
        let (ctx, acts, config) = (self.ctx, self.acts, self.config);
        let stream = self.stream_buffers().0;
        let normed_q8 = match (self.mode, readers.is_empty()) {
            (ForwardMode::Decode, false) => self.q8_input_for(readers).filter(|q8| q8.len == config.hidden),
            _ => None,
        };
        // Only the residual norm writes the Q8 form.
        self.wrote(&acts.normed, normed_q8.filter(|_| norm.block_out.is_some()));
        match norm.block_out {
            Some(block_out) => {
                let rows = ResidualRows { block_out, hidden: stream, normed: &acts.normed, normed_q8 };
                let norms =
                    ResidualNorms { post_norm: norm.post_norm, next_norm: norm.norm, eps: config.rms_eps };
                record_residual_norm(ctx, ops, &norm.label, rows, norms, &acts.step)
            }
            None => record_rms_norm(
                ctx,
                ops,
                &norm.label,
                stream,
                RmsNorm { weight: norm.norm, eps: config.rms_eps },
                NormOutput::To(&acts.normed),
                &acts.step,
            ),
        }
    }

    /// The pending norm, taken for the decode kernels of `stacks` (`gated`: one gated product)
    /// where they all fold it in to advantage; otherwise it is recorded now and None returned.
    fn take_fusable_norm(
        &self,
        ops: &mut OpList,
        stacks: &[StackedMatrix],
        gated: bool,
    ) -> Result<Option<PendingNorm<'a>>, KernelError> {
        let fusable = self.mode == ForwardMode::Decode && normed_input_pays(self.ctx, stacks, gated);
        if fusable {
            return Ok(self.pending_norm.borrow_mut().take());
        }
        self.flush_norm(ops, &matrices(stacks))?;
        Ok(None)
    }

    /// The residual stream's buffer now and the other one.
    fn stream_buffers(&self) -> (&'a GpuTensor, &'a GpuTensor) {
        let acts = self.acts;
        if self.stream_in_alt.get() {
            (&acts.hidden_alt, &acts.hidden)
        } else {
            (&acts.hidden, &acts.hidden_alt)
        }
    }

    fn normed_input(&self, norm: &PendingNorm<'a>) -> NormedInput<'a> {
        let (stream_in, stream_out) = self.stream_buffers();
        let eps = self.config.rms_eps;
        match norm.block_out {
            Some(block_out) => NormedInput {
                source: block_out,
                norm: norm.norm,
                residual: Some(ResidualStream {
                    stream_in,
                    stream_out: Some(stream_out),
                    post_norm: norm.post_norm,
                }),
                eps,
            },
            None => NormedInput { source: stream_in, norm: norm.norm, residual: None, eps },
        }
    }

    /// After the kernels that folded in `fused`: the stream they wrote is the current one.
    fn consumed(&self, fused: Option<PendingNorm>) {
        if fused.is_some_and(|norm| norm.block_out.is_some()) {
            self.stream_in_alt.set(!self.stream_in_alt.get());
        }
    }
}

/// A dispatch label from a tensor name: `blk.3.attn_q.weight` → `blk.3.attn_q`.
fn part_label(tensor: &str) -> String {
    tensor.trim_end_matches(".weight").to_string()
}

/// The label of a stack's dispatch: `blk.3.attn_q+attn_k+attn_v`.
fn stack_label(stack: &StackedMatrix) -> String {
    let labels: Vec<String> = stack.parts.iter().map(|part| part_label(&part.name)).collect();
    joined_label(&labels.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The label of a stack's dispatch that folds in a norm: the norm's label (and layer) and the
/// parts, `blk.3.post_ffw_norm+next_norm+attn_q+attn_k+attn_v`, so the profiler's per-layer
/// grouping still works.
fn fused_label(norm_label: &str, stack: &StackedMatrix) -> String {
    let stack = stack_label(stack);
    let parts = stack.rsplit('.').next().unwrap_or(&stack);
    format!("{norm_label}+{parts}")
}

/// What one layer's recording reads besides the shared activations: its index, weights,
/// KV cache, RoPE table and the pre-norm of what follows it (the next layer's, or the output norm).
pub(super) struct LayerInputs<'a> {
    pub index: u32,
    pub weights: &'a LayerWeights,
    pub cache: &'a KvCache,
    pub rope: &'a RopeTable,
    pub next_norm: &'a GpuTensor,
}

/// The norms around a residual add: the block's own post-norm (Gemma) and the next pre-norm.
pub(super) struct LayerEnds<'a> {
    pub post_norm: Option<&'a GpuTensor>,
    pub next_norm: &'a GpuTensor,
}

/// A session's forward pass: its KV cache, activations and the recorded op lists for a
/// prefill step and a decode step. Everything is allocated here, once; a step only encodes.
pub struct ForwardGraph {
    pub acts: Activations,
    pub caches: Vec<KvCache>,
    pub context_len: u32,
    pub prefill: OpList,
    pub decode: OpList,
}

/// Kernels appended to both the prefill and the decode step (the sampler).
pub type StepTail<'a> = &'a dyn Fn(&mut OpList, &Activations) -> Result<(), KernelError>;

impl ForwardGraph {
    pub fn new(
        ctx: &GpuContext,
        config: &ModelConfig,
        weights: &ModelWeights,
        context_len: u32,
        max_batch: u32,
        tail: StepTail,
    ) -> Result<ForwardGraph, ModelError> {
        let acts = ctx.checked("allocating activations", || Activations::new(ctx, config, max_batch))?;
        let caches = ctx.checked("allocating the KV cache", || {
            (0..config.n_layers)
                .map(|layer| {
                    let cache_len = config.kv_cache_len(layer, context_len, max_batch);
                    KvCache::new(
                        ctx,
                        &format!("layer {layer}"),
                        cache_len,
                        config.n_kv_heads,
                        config.head_dim,
                    )
                })
                .collect::<Vec<_>>()
        })?;
        let rope_global =
            RopeTable::new(ctx, config.rope_for_context(context_len), config.rope_dim, context_len);
        let rope_local =
            config.rope_local.as_ref().map(|rope| RopeTable::new(ctx, rope, config.rope_dim, context_len));
        let tables = RopeTables { global: &rope_global, local: rope_local.as_ref() };
        let mut graph =
            ForwardGraph { acts, caches, context_len, prefill: OpList::new(), decode: OpList::new() };
        for mode in [ForwardMode::Prefill, ForwardMode::Decode] {
            let mut ops = graph.record(ctx, config, weights, &tables, mode)?;
            tail(&mut ops, &graph.acts)?;
            let (step, list) = match mode {
                ForwardMode::Prefill => ("prefill", &mut graph.prefill),
                ForwardMode::Decode => ("decode", &mut graph.decode),
            };
            ops.log_variants(step);
            *list = ops;
        }
        Ok(graph)
    }

    fn record(
        &self,
        ctx: &GpuContext,
        config: &ModelConfig,
        weights: &ModelWeights,
        rope: &RopeTables,
        mode: ForwardMode,
    ) -> Result<OpList, ModelError> {
        let acts = &self.acts;
        let layer_ctx = LayerContext::new(ctx, config, acts, mode);
        let mut ops = OpList::new();
        let arch = config.architecture.spec();
        let embedding_scale = arch.embedding_scale(config);
        record_embedding(
            ctx,
            &mut ops,
            "embedding",
            ScaledTable { table: &weights.token_embedding, scale: embedding_scale },
            &acts.tokens,
            &acts.hidden,
            &acts.step,
        )?;
        // Each layer leaves the next one's attention pre-norm (the output norm after the last
        // layer) in `normed`, fused with its final residual add; only the first needs its own.
        let first_norm = weights.layers.first().map_or(&weights.output_norm, |layer| &layer.attn_norm);
        layer_ctx.first_norm(&mut ops, "blk.0.attn_norm", first_norm)?;
        for (index, (layer, cache)) in weights.layers.iter().zip(&self.caches).enumerate() {
            let next_norm =
                weights.layers.get(index + 1).map_or(&weights.output_norm, |next| &next.attn_norm);
            let index = index as u32;
            let table = match rope.local {
                Some(local) if config.is_sliding_layer(index) => local,
                _ => rope.global,
            };
            let inputs = LayerInputs { index, weights: layer, cache, rope: table, next_norm };
            arch.record_layer(&layer_ctx, &mut ops, &inputs)?;
        }
        let lm_head = weights.lm_head();
        layer_ctx.flush_norm(&mut ops, &[lm_head])?;
        // A decode step's one token is already the last row.
        let last_normed = match mode {
            ForwardMode::Prefill => {
                record_copy_last_row(
                    ctx,
                    &mut ops,
                    "last token",
                    &acts.normed,
                    &acts.last_normed,
                    &acts.step,
                )?;
                &acts.last_normed
            }
            ForwardMode::Decode => &acts.normed,
        };
        // Prefill's logits stay of the f32 row: they decide the first token and score
        // perplexity, and one product per prompt is no cost worth saving.
        let input = match mode {
            ForwardMode::Prefill => MatvecInput::Vector(last_normed),
            ForwardMode::Decode => layer_ctx.decode_input(&mut ops, "lm head", &[lm_head], last_normed)?,
        };
        record_matvec_of(ctx, &mut ops, "lm head", lm_head, input, &acts.logits)?;
        Ok(ops)
    }

    pub fn size_bytes(&self) -> u64 {
        self.acts.size_bytes() + self.caches.iter().map(KvCache::size_bytes).sum::<u64>()
    }
}

/// The RoPE tables of a session: full-attention layers', and sliding-window layers' where theirs differs.
struct RopeTables<'a> {
    pub global: &'a RopeTable,
    pub local: Option<&'a RopeTable>,
}
