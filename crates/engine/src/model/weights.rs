use std::borrow::Cow;

use super::{config::Architecture, ModelConfig, ModelError};
use crate::{
    gguf::{GgmlType, GgufFile},
    gpu::{GpuContext, GpuMatrix, StackedMatrix},
    quant::{widen_to_q8_0, widens_to_q8_0},
};

/// Gemma 3's extra per-layer weights.
pub struct GemmaLayerNorms {
    pub q_norm: wgpu::Buffer,
    pub k_norm: wgpu::Buffer,
    pub post_attention_norm: wgpu::Buffer,
    pub post_ffn_norm: wgpu::Buffer,
}

pub struct LayerWeights {
    pub attn_norm: wgpu::Buffer,
    /// q, k and v, stacked where their types allow (see `Uploader::stacks`).
    pub qkv: Vec<StackedMatrix>,
    pub o: GpuMatrix,
    pub ffn_norm: wgpu::Buffer,
    /// gate and up, stacked where their types allow.
    pub gate_up: Vec<StackedMatrix>,
    pub down: GpuMatrix,
    pub gemma: Option<GemmaLayerNorms>,
}

/// Every weight of a model, on the GPU in its GGUF layout.
pub struct ModelWeights {
    pub token_embedding: GpuMatrix,
    /// `None` when the LM head is the token embedding (tied).
    pub output: Option<GpuMatrix>,
    pub output_norm: wgpu::Buffer,
    pub layers: Vec<LayerWeights>,
    pub bytes: u64,
}

impl ModelWeights {
    pub fn lm_head(&self) -> &GpuMatrix {
        self.output.as_ref().unwrap_or(&self.token_embedding)
    }

    /// Uploads every tensor `config` names; `progress` gets the fraction done after each one.
    pub fn upload(
        ctx: &GpuContext,
        gguf: &GgufFile,
        config: &ModelConfig,
        progress: &mut dyn FnMut(f32),
    ) -> Result<ModelWeights, ModelError> {
        let expected = config.expected_tensors();
        let total: u64 = expected.iter().filter_map(|(name, _)| gguf.tensor(name)).map(|t| t.n_bytes).sum();
        let mut uploader = Uploader { ctx, gguf, done: 0, total: total.max(1), progress };
        let token_embedding = uploader.matrix("token_embd.weight")?;
        let output = if config.tied_embeddings { None } else { Some(uploader.matrix("output.weight")?) };
        let output_norm = uploader.vector("output_norm.weight")?;
        let mut layers = Vec::with_capacity(config.n_layers as usize);
        for layer in 0..config.n_layers {
            let name = |suffix: &str| format!("blk.{layer}.{suffix}.weight");
            let gemma = match config.architecture {
                Architecture::Gemma3 => Some(GemmaLayerNorms {
                    q_norm: uploader.vector(&name("attn_q_norm"))?,
                    k_norm: uploader.vector(&name("attn_k_norm"))?,
                    post_attention_norm: uploader.vector(&name("post_attention_norm"))?,
                    post_ffn_norm: uploader.vector(&name("post_ffw_norm"))?,
                }),
                Architecture::Llama => None,
            };
            layers.push(LayerWeights {
                attn_norm: uploader.vector(&name("attn_norm"))?,
                qkv: uploader.stacks(&[&name("attn_q"), &name("attn_k"), &name("attn_v")])?,
                o: uploader.matrix(&name("attn_output"))?,
                ffn_norm: uploader.vector(&name("ffn_norm"))?,
                gate_up: uploader.stacks(&[&name("ffn_gate"), &name("ffn_up")])?,
                down: uploader.matrix(&name("ffn_down"))?,
                gemma,
            });
        }
        Ok(ModelWeights { token_embedding, output, output_norm, layers, bytes: uploader.done })
    }
}

/// The type a stack of `a` and `b` matrices takes, if they can share one.
fn stack_type(a: GgmlType, b: GgmlType) -> Option<GgmlType> {
    if a == b {
        Some(a)
    } else if widens_to_q8_0(a) && widens_to_q8_0(b) && (a == GgmlType::Q8_0 || b == GgmlType::Q8_0) {
        Some(GgmlType::Q8_0)
    } else {
        None
    }
}

struct Uploader<'a> {
    ctx: &'a GpuContext,
    gguf: &'a GgufFile,
    done: u64,
    total: u64,
    progress: &'a mut dyn FnMut(f32),
}

impl Uploader<'_> {
    fn matrix(&mut self, name: &str) -> Result<GpuMatrix, ModelError> {
        let info = self.gguf.tensor(name).ok_or_else(|| ModelError::MissingTensor(name.to_string()))?;
        let data = self.gguf.tensor_data(info);
        let matrix = self.ctx.checked(&format!("uploading {name}"), || {
            GpuMatrix::upload(self.ctx, name, info.ggml_type, info.row_len(), info.rows(), data)
        })??;
        self.advance(info.n_bytes);
        Ok(matrix)
    }

    /// Uploads `names` (matrices of one input) as stacks: each run of neighbours with one type
    /// and row length that fits one binding becomes one matrix, so decode reads it in one
    /// dispatch. Q4_0 and Q5_0 neighbours of a Q8_0 matrix join it as Q8_0 (exact, see
    /// `widen_to_q8_0`): their extra bytes take less time to read than a dispatch of their own.
    fn stacks(&mut self, names: &[&str]) -> Result<Vec<StackedMatrix>, ModelError> {
        let infos = names
            .iter()
            .map(|&name| self.gguf.tensor(name).ok_or_else(|| ModelError::MissingTensor(name.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let mut stacks = Vec::new();
        let mut first = 0;
        while first < infos.len() {
            let head = infos[first];
            let mut ty = head.ggml_type;
            let mut end = first + 1;
            while let Some(next) = infos.get(end) {
                let Some(joined) = stack_type(ty, next.ggml_type) else { break };
                let values: u64 = infos[first..=end].iter().map(|info| info.row_len() * info.rows()).sum();
                let fits = StackedMatrix::fits_one_binding(
                    self.ctx,
                    values / joined.block_len() as u64 * joined.block_bytes() as u64,
                );
                if next.row_len() != head.row_len() || !fits {
                    break;
                }
                ty = joined;
                end += 1;
            }
            let group = &infos[first..end];
            let stack_name = group.iter().map(|info| info.name.as_str()).collect::<Vec<_>>().join("+");
            let stack = if group.len() == 1 {
                let matrix = self.matrix(&head.name)?;
                let rows = matrix.rows;
                StackedMatrix { matrix, parts: vec![crate::gpu::StackPart { name: head.name.clone(), rows }] }
            } else {
                let data = group
                    .iter()
                    .map(|info| {
                        let data = self.gguf.tensor_data(info);
                        if info.ggml_type == ty {
                            Ok(Cow::Borrowed(data))
                        } else {
                            widen_to_q8_0(info.ggml_type, data)
                                .map(Cow::Owned)
                                .map_err(|source| ModelError::Widen { name: info.name.clone(), source })
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let parts: Vec<(&str, u64, &[u8])> = group
                    .iter()
                    .zip(&data)
                    .map(|(info, data)| (info.name.as_str(), info.rows(), data.as_ref()))
                    .collect();
                let stack = self.ctx.checked(&format!("uploading {stack_name}"), || {
                    StackedMatrix::upload(self.ctx, &stack_name, ty, head.row_len(), &parts)
                })??;
                self.advance(group.iter().map(|info| info.n_bytes).sum());
                stack
            };
            stacks.push(stack);
            first = end;
        }
        Ok(stacks)
    }

    fn vector(&mut self, name: &str) -> Result<wgpu::Buffer, ModelError> {
        let info = self.gguf.tensor(name).ok_or_else(|| ModelError::MissingTensor(name.to_string()))?;
        let buffer = self.ctx.checked(&format!("uploading {name}"), || {
            self.ctx.storage_buffer(name, self.gguf.tensor_data(info))
        })?;
        self.advance(info.n_bytes);
        Ok(buffer)
    }

    fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        (self.progress)(self.done as f32 / self.total as f32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_q8_0_takes_in_neighbours_of_other_types() {
        assert_eq!(stack_type(GgmlType::Q5_0, GgmlType::Q5_0), Some(GgmlType::Q5_0));
        assert_eq!(stack_type(GgmlType::Q5_0, GgmlType::Q8_0), Some(GgmlType::Q8_0));
        assert_eq!(stack_type(GgmlType::Q8_0, GgmlType::Q4_0), Some(GgmlType::Q8_0));
        // Widening both would only add bytes.
        assert_eq!(stack_type(GgmlType::Q5_0, GgmlType::Q4_0), None);
        assert_eq!(stack_type(GgmlType::Q4_K, GgmlType::Q6_K), None);
        assert_eq!(stack_type(GgmlType::Q4_1, GgmlType::Q8_0), None);
    }
}
