//! Logits read back after a prompt, and every position of a prompt scored at once.

use std::sync::Arc;

use crate::{
    generate::{GenerateError, Session},
    gpu::{Element, GpuContext, GpuTensor, OpList, StepBuffer},
    kernels::matmul::record_matmul,
    load::LoadedModel,
};

impl Session {
    /// Runs `tokens` from an empty cache and returns the logits after the last one.
    /// For tests and evaluation: generation never reads logits back.
    pub fn logits_after(&mut self, tokens: &[u32]) -> Result<Vec<f32>, GenerateError> {
        self.prefill_fresh(tokens)?;
        let model = self.model();
        Ok(model.gpu().read_f32(self.activations().logits.buffer(), model.config().vocab_size as usize)?)
    }
}

/// Scores every position of a prompt: a session plus the LM head as a batched matmul over
/// several rows at once, so a prefill batch is scored without one pass over the vocabulary
/// per row.
pub struct Scorer {
    session: Session,
    rows: RowLogits,
}

impl Scorer {
    pub fn new(model: &Arc<LoadedModel>) -> Result<Scorer, GenerateError> {
        Ok(Scorer { session: model.new_session()?, rows: RowLogits::new(model.gpu(), model)? })
    }

    /// Runs `tokens` from an empty cache and returns, for each position `i >= first_scored`,
    /// the negative log-likelihood of `tokens[i]` given the tokens before it.
    pub fn negative_log_likelihoods(
        &mut self,
        tokens: &[u32],
        first_scored: usize,
    ) -> Result<Vec<f64>, GenerateError> {
        let max_tokens = self.session.activations().max_tokens;
        if tokens.len() > max_tokens as usize {
            return Err(GenerateError::InvalidRequest(format!(
                "{} tokens exceed one prefill batch of {max_tokens}",
                tokens.len()
            )));
        }
        self.session.prefill_fresh(tokens)?;
        let model = self.session.model().clone();
        let ctx = model.gpu();
        let rows = &self.rows;
        let hidden_bytes = u64::from(model.config().hidden) * 4;
        let vocab = model.config().vocab_size as usize;
        let positions: Vec<usize> = (first_scored.max(1)..tokens.len()).collect();
        let mut nlls = Vec::with_capacity(positions.len());
        for group in positions.chunks(rows.capacity as usize) {
            // Row p - 1 of the final-normed hidden states predicts token p.
            let first_row = group[0] as u64 - 1;
            let mut encoder = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("lm head rows") });
            encoder.copy_buffer_to_buffer(
                self.session.activations().normed.buffer(),
                first_row * hidden_bytes,
                rows.input.buffer(),
                0,
                group.len() as u64 * hidden_bytes,
            );
            rows.step.write(&ctx.queue, 0, group.len() as u32);
            rows.ops.encode(&mut encoder, group.len() as u32, None);
            ctx.queue.submit([encoder.finish()]);
            let logits = ctx.read_f32(rows.logits.buffer(), group.len() * vocab)?;
            for (row, &position) in group.iter().enumerate() {
                nlls.push(negative_log_likelihood(
                    &logits[row * vocab..(row + 1) * vocab],
                    tokens[position] as usize,
                ));
            }
        }
        Ok(nlls)
    }
}

/// The LM head over up to `capacity` rows of final-normed hidden states.
struct RowLogits {
    capacity: u32,
    step: StepBuffer,
    input: GpuTensor,
    logits: GpuTensor,
    ops: OpList,
}

impl RowLogits {
    fn new(ctx: &GpuContext, model: &LoadedModel) -> Result<RowLogits, GenerateError> {
        let vocab_bytes = u64::from(model.config().vocab_size) * 4;
        let capacity = (ctx.caps.max_storage_binding / vocab_bytes).clamp(1, 32) as u32;
        let step = StepBuffer::new(ctx);
        let config = model.config();
        let input = GpuTensor::zeroed(ctx, "row logits input", capacity, config.hidden, Element::F32);
        let logits = GpuTensor::zeroed(ctx, "row logits", capacity, config.vocab_size, Element::F32);
        let mut ops = OpList::new();
        record_matmul(ctx, &mut ops, "lm head rows", model.weights().lm_head(), &input, &logits, &step)?;
        Ok(RowLogits { capacity, step, input, logits, ops })
    }
}

/// -log softmax(logits)[target], in f64.
fn negative_log_likelihood(logits: &[f32], target: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    (sum.ln() + max) - logits[target] as f64
}
