use super::{arch::Storage, ModelConfig, ModelError};
use crate::{
    generate::CancelToken,
    gguf::{GgmlType, GgufFile, TensorBytes},
    gpu::{Element, GpuContext, GpuMatrix, GpuTensor, StackedMatrix},
    quant::{widen_to_q8_0, widens_to_q8_0},
};

/// Per-head RMSNorm weights of q and k (Gemma 3, Qwen 3).
pub struct QkNormWeights {
    pub q: GpuTensor,
    pub k: GpuTensor,
}

/// Biases added to the q, k and v projections (Qwen 2).
pub struct QkvBias {
    /// q's, k's and v's end to end: the q/k step adds them (`QkStep::bias`) in prefill, and in
    /// decode where the products cannot.
    pub qkv: GpuTensor,
    /// For each stack of the layer's `qkv`, its parts' biases end to end: the decode product
    /// adds them as it stores its rows.
    pub stacks: Vec<GpuTensor>,
}

/// Norms of the attention and feed-forward outputs before their residual adds (Gemma 3).
pub struct PostNorms {
    pub attention: GpuTensor,
    pub ffn: GpuTensor,
}

/// One layer's weights; which optional parts it has is its architecture's `LayerLayout`.
pub struct LayerWeights {
    pub attn_norm: GpuTensor,
    /// q, k and v, stacked where their types allow (see `Uploader::stacks`).
    pub qkv: Vec<StackedMatrix>,
    pub qkv_bias: Option<QkvBias>,
    pub qk_norms: Option<QkNormWeights>,
    pub o: GpuMatrix,
    pub ffn_norm: GpuTensor,
    /// gate and up, stacked where their types allow.
    pub gate_up: Vec<StackedMatrix>,
    pub down: GpuMatrix,
    pub post_norms: Option<PostNorms>,
}

/// Every weight of a model, on the GPU in its GGUF layout.
pub struct ModelWeights {
    pub token_embedding: GpuMatrix,
    /// `None` when the LM head is the token embedding (tied).
    pub output: Option<GpuMatrix>,
    pub output_norm: GpuTensor,
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
        cancel: &CancelToken,
        progress: &mut dyn FnMut(f32),
    ) -> Result<ModelWeights, ModelError> {
        let weights = Self::upload_tensors(ctx, gguf, config, cancel, progress);
        ctx.release_upload_staging();
        weights
    }

    fn upload_tensors(
        ctx: &GpuContext,
        gguf: &GgufFile,
        config: &ModelConfig,
        cancel: &CancelToken,
        progress: &mut dyn FnMut(f32),
    ) -> Result<ModelWeights, ModelError> {
        let expected = config.expected_tensors();
        let total: u64 = expected.iter().filter_map(|(name, _)| gguf.tensor(name)).map(|t| t.n_bytes).sum();
        let mut uploader = Uploader { ctx, gguf, done: 0, total: total.max(1), cancel, progress };
        let token_embedding = uploader.matrix("token_embd.weight")?;
        let output = if config.tied_embeddings { None } else { Some(uploader.matrix("output.weight")?) };
        let output_norm = uploader.vector("output_norm.weight")?;
        let layout = config.layout();
        let q_rows = u64::from(config.n_heads * config.head_dim);
        let kv_rows = u64::from(config.n_kv_heads * config.head_dim);
        let ffn_rows = u64::from(config.ffn_hidden);
        let mut layers = Vec::with_capacity(config.n_layers as usize);
        for layer in 0..config.n_layers {
            let name = |suffix: &str| format!("blk.{layer}.{suffix}.weight");
            let qkv_parts = match layout.qkv {
                Storage::Separate => uploader.parts(&[&name("attn_q"), &name("attn_k"), &name("attn_v")])?,
                Storage::Fused => uploader.split(
                    &name("attn_qkv"),
                    &[(name("attn_q"), q_rows), (name("attn_k"), kv_rows), (name("attn_v"), kv_rows)],
                )?,
            };
            let gate_up_parts = match layout.gate_up {
                Storage::Separate => uploader.parts(&[&name("ffn_gate"), &name("ffn_up")])?,
                Storage::Fused => uploader
                    .split(&name("ffn_up"), &[(name("ffn_gate"), ffn_rows), (name("ffn_up"), ffn_rows)])?,
            };
            let attn_norm = uploader.vector(&name("attn_norm"))?;
            let qkv = uploader.stacks(&qkv_parts)?;
            layers.push(LayerWeights {
                attn_norm,
                qkv_bias: match layout.qkv_bias {
                    true => Some(uploader.qkv_bias(
                        &format!("blk.{layer}.attn_qkv bias"),
                        &[name("attn_q"), name("attn_k"), name("attn_v")],
                        &qkv,
                    )?),
                    false => None,
                },
                qkv,
                qk_norms: match layout.qk_norm {
                    true => Some(QkNormWeights {
                        q: uploader.vector(&name("attn_q_norm"))?,
                        k: uploader.vector(&name("attn_k_norm"))?,
                    }),
                    false => None,
                },
                o: uploader.matrix(&name("attn_output"))?,
                ffn_norm: uploader.vector(&name("ffn_norm"))?,
                gate_up: uploader.stacks(&gate_up_parts)?,
                down: uploader.matrix(&name("ffn_down"))?,
                post_norms: match layout.post_norms {
                    true => Some(PostNorms {
                        attention: uploader.vector(&name("post_attention_norm"))?,
                        ffn: uploader.vector(&name("post_ffw_norm"))?,
                    }),
                    false => None,
                },
            });
        }
        Ok(ModelWeights { token_embedding, output, output_norm, layers, bytes: uploader.done })
    }
}

/// A matrix to stack: a whole tensor, or a row range of a fused one (named as the tensor
/// would be if it stood alone).
struct Part<'g> {
    name: String,
    ggml_type: GgmlType,
    row_len: u64,
    rows: u64,
    data: TensorBytes<'g>,
}

/// The type a stack of `a` and `b` matrices takes, if they can share one.
pub(super) fn stack_type(a: GgmlType, b: GgmlType) -> Option<GgmlType> {
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
    cancel: &'a CancelToken,
    progress: &'a mut dyn FnMut(f32),
}

impl<'a> Uploader<'a> {
    fn matrix(&mut self, name: &str) -> Result<GpuMatrix, ModelError> {
        let info = self.gguf.tensor(name).ok_or_else(|| ModelError::MissingTensor(name.to_string()))?;
        let data = self.gguf.tensor_bytes(info);
        let matrix = self.ctx.checked(&format!("uploading {name}"), || {
            GpuMatrix::upload_pieces(
                self.ctx,
                name,
                info.ggml_type,
                info.row_len(),
                info.rows(),
                &data,
                u64::MAX,
            )
        })??;
        self.advance(info.n_bytes)?;
        Ok(matrix)
    }

    /// The tensors `names`, whole, as parts to stack.
    fn parts(&self, names: &[&str]) -> Result<Vec<Part<'a>>, ModelError> {
        names
            .iter()
            .map(|&name| {
                let info =
                    self.gguf.tensor(name).ok_or_else(|| ModelError::MissingTensor(name.to_string()))?;
                Ok(Part {
                    name: info.name.clone(),
                    ggml_type: info.ggml_type,
                    row_len: info.row_len(),
                    rows: info.rows(),
                    data: self.gguf.tensor_bytes(info),
                })
            })
            .collect()
    }

    /// The fused tensor `name` cut into consecutive row ranges `pieces` (name, rows): rows of a
    /// quantized matrix are whole blocks, so each piece is a byte range.
    fn split(&self, name: &str, pieces: &[(String, u64)]) -> Result<Vec<Part<'a>>, ModelError> {
        let info = self.gguf.tensor(name).ok_or_else(|| ModelError::MissingTensor(name.to_string()))?;
        let data = self.gguf.tensor_bytes(info);
        let row_bytes = info.row_bytes();
        let mut first = 0u64;
        let mut parts = Vec::with_capacity(pieces.len());
        let too_short = || ModelError::InvalidConfig(format!("tensor '{name}' is too short for its parts"));
        for (piece, rows) in pieces {
            let end = rows
                .checked_mul(row_bytes)
                .and_then(|bytes| bytes.checked_add(first))
                .ok_or_else(too_short)?;
            let bytes = data.slice(first..end).ok_or_else(too_short)?;
            parts.push(Part {
                name: piece.clone(),
                ggml_type: info.ggml_type,
                row_len: info.row_len(),
                rows: *rows,
                data: bytes,
            });
            first = end;
        }
        Ok(parts)
    }

    /// Uploads `parts` (matrices of one input) as stacks: each run of neighbours with one type
    /// and row length that fits one binding becomes one matrix, so decode reads it in one
    /// dispatch. Q4_0 and Q5_0 neighbours of a Q8_0 matrix join it as Q8_0 (exact, see
    /// `widen_to_q8_0`): their extra bytes take less time to read than a dispatch of their own.
    fn stacks(&mut self, parts: &[Part]) -> Result<Vec<StackedMatrix>, ModelError> {
        let mut stacks = Vec::new();
        let mut first = 0;
        while first < parts.len() {
            let head = &parts[first];
            let mut ty = head.ggml_type;
            let mut end = first + 1;
            while let Some(next) = parts.get(end) {
                let Some(joined) = stack_type(ty, next.ggml_type) else { break };
                let values: u64 = parts[first..=end].iter().map(|part| part.row_len * part.rows).sum();
                let fits = StackedMatrix::fits_one_binding(
                    self.ctx,
                    values / joined.block_len() as u64 * joined.block_bytes() as u64,
                );
                if next.row_len != head.row_len || !fits {
                    break;
                }
                ty = joined;
                end += 1;
            }
            let group = &parts[first..end];
            let stack = if group.len() == 1 {
                let matrix = self.ctx.checked(&format!("uploading {}", head.name), || {
                    GpuMatrix::upload_pieces(
                        self.ctx,
                        &head.name,
                        head.ggml_type,
                        head.row_len,
                        head.rows,
                        &head.data,
                        u64::MAX,
                    )
                })??;
                let rows = matrix.rows;
                StackedMatrix { matrix, parts: vec![crate::gpu::StackPart { name: head.name.clone(), rows }] }
            } else {
                let stack_name = group.iter().map(|part| part.name.as_str()).collect::<Vec<_>>().join("+");
                // Parts of another type are widened into host copies; the rest go up from
                // where they lie.
                let widened = group
                    .iter()
                    .map(|part| {
                        (part.ggml_type != ty)
                            .then(|| widen_to_q8_0(part.ggml_type, &part.data.contiguous()))
                            .transpose()
                            .map_err(|source| ModelError::Widen { name: part.name.clone(), source })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let stacked: Vec<(&str, u64, TensorBytes)> = group
                    .iter()
                    .zip(&widened)
                    .map(|(part, widened)| {
                        let data = match widened {
                            Some(bytes) => TensorBytes::new(vec![bytes]),
                            None => part.data.clone(),
                        };
                        (part.name.as_str(), part.rows, data)
                    })
                    .collect();
                self.ctx.checked(&format!("uploading {stack_name}"), || {
                    StackedMatrix::upload_pieces(self.ctx, &stack_name, ty, head.row_len, &stacked)
                })??
            };
            self.advance(group.iter().map(|part| part.data.len()).sum())?;
            stacks.push(stack);
            first = end;
        }
        Ok(stacks)
    }

    /// An f32 vector (the config checked its type and length): one row of its length.
    fn vector(&mut self, name: &str) -> Result<GpuTensor, ModelError> {
        let info = self.gguf.tensor(name).ok_or_else(|| ModelError::MissingTensor(name.to_string()))?;
        let width = info.n_elements() as u32;
        let buffer = self.ctx.checked(&format!("uploading {name}"), || {
            GpuTensor::from_bytes(self.ctx, name, width, Element::F32, &self.gguf.tensor_data(info))
        })?;
        self.advance(info.n_bytes)?;
        Ok(buffer)
    }

    /// The biases of the q, k and v matrices `weights`, end to end and per stack of `stacks`;
    /// their bytes count once.
    fn qkv_bias(
        &mut self,
        label: &str,
        weights: &[String],
        stacks: &[StackedMatrix],
    ) -> Result<QkvBias, ModelError> {
        let qkv = self.biases(label, weights)?;
        let stacks = stacks
            .iter()
            .map(|stack| {
                let parts: Vec<_> = stack.parts.iter().map(|part| part.name.clone()).collect();
                self.biases(&format!("{} bias", stack.matrix.name), &parts)
            })
            .collect::<Result<_, _>>()?;
        self.advance(u64::from(qkv.width()) * 4)?;
        Ok(QkvBias { qkv, stacks })
    }

    /// The biases of the matrices `weights` end to end (`blk.N.attn_q.weight`'s is
    /// `blk.N.attn_q.bias`), f32 vectors the config checked.
    fn biases(&self, label: &str, weights: &[String]) -> Result<GpuTensor, ModelError> {
        let mut bytes = Vec::new();
        for weight in weights {
            let name = format!("{}.bias", weight.trim_end_matches(".weight"));
            let info = self.gguf.tensor(&name).ok_or(ModelError::MissingTensor(name))?;
            bytes.extend_from_slice(&self.gguf.tensor_data(info));
        }
        let buffer = self.ctx.checked(&format!("uploading {label}"), || {
            GpuTensor::from_bytes(self.ctx, label, (bytes.len() / 4) as u32, Element::F32, &bytes)
        })?;
        Ok(buffer)
    }

    /// Counts an uploaded tensor; a cancelled load stops here, between tensors (a 40 GB
    /// model takes minutes to upload, and quitting or a cancel click must not wait for it).
    fn advance(&mut self, bytes: u64) -> Result<(), ModelError> {
        if self.cancel.is_cancelled() {
            return Err(ModelError::LoadCancelled);
        }
        self.done += bytes;
        (self.progress)(self.done as f32 / self.total as f32);
        Ok(())
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
