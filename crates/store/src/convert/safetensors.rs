//! A Hugging Face safetensors folder → RDRR: `config.json` into the engine's metadata,
//! `tokenizer.json` and `tokenizer_config.json` into its tokenizer keys, each tensor renamed,
//! (for Llama's Q and K) permuted for interleaved RoPE, (for Gemma's norms) given their +1, and
//! quantized, a few rows at a time; vectors the config holds (Phi 3's LongRoPE factors) become
//! F32 tensors, as llama.cpp writes them.

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom},
    path::{Path, PathBuf},
};

use doppler_engine::{
    gguf::{GgmlType, MetadataValue},
    quant::quantize_row,
    rdrr::{RdrrWriter, WrittenRdrr},
    store::ensure_free_space,
};
use memmap2::Mmap;
use safetensors::{tensor::Dtype, SafeTensors};
use serde_json::Value;

use super::{
    hf_config::{HfConfig, RowTransform},
    hf_tokenizer::tokenizer_metadata,
    ConvertError, ConvertProgress, TargetQuant,
};
use crate::download::CancelToken;

/// Rows are read, widened to f32 and quantized in pieces of about this many source bytes.
const CHUNK_BYTES: usize = 8 << 20;
/// A tokenizer.json with a 262,144-token vocabulary is about 35 MB.
const MAX_JSON_BYTES: u64 = 128 << 20;

/// One tensor of one safetensors file.
struct SourceTensor {
    file: usize,
    hf_name: String,
    name: String,
    dtype: Dtype,
    /// Outermost first.
    shape: Vec<u64>,
    /// Absolute offset in its file.
    offset: u64,
    bytes: u64,
}

/// Converts the Hugging Face model in `folder` into an RDRR model in `out_dir`: matrices in
/// `quant`'s types (Q8_0 or F16 where a row is not whole blocks of them), norms and biases in F32.
pub fn safetensors_to_rdrr(
    folder: &Path,
    out_dir: &Path,
    quant: TargetQuant,
    shard_limit: u64,
    progress: &mut dyn FnMut(ConvertProgress),
) -> Result<WrittenRdrr, ConvertError> {
    safetensors_to_rdrr_until_cancelled(folder, out_dir, quant, shard_limit, &CancelToken::new(), progress)
}

/// [`safetensors_to_rdrr`] that stops with [`ConvertError::Cancelled`] before the next tensor
/// once `cancel` is cancelled (what it wrote into `out_dir` is left for the caller to remove).
pub(crate) fn safetensors_to_rdrr_until_cancelled(
    folder: &Path,
    out_dir: &Path,
    quant: TargetQuant,
    shard_limit: u64,
    cancel: &CancelToken,
    progress: &mut dyn FnMut(ConvertProgress),
) -> Result<WrittenRdrr, ConvertError> {
    let config = HfConfig::parse(&read_json(&folder.join("config.json"))?)?;
    let (paths, mut tensors) = list_tensors(folder, &config)?;
    let has = |name: &str| tensors.iter().any(|t| t.name == name);
    if !has("token_embd.weight") {
        return Err(ConvertError::MissingTensor { name: "model.embed_tokens.weight".into() });
    }
    if config.tied_embeddings {
        // A tied head is the embedding: the engine reads it from `token_embd`.
        tensors.retain(|t| t.name != "output.weight");
    } else if !has("output.weight") {
        return Err(ConvertError::MissingTensor { name: "lm_head.weight".into() });
    }
    let vocab_rows = tensors.iter().find(|t| t.name == "token_embd.weight").map(|t| t.shape[0]).unwrap_or(0);
    let tokenizer_config = match folder.join("tokenizer_config.json") {
        path if path.is_file() => read_json(&path)?,
        _ => Value::Null,
    };
    let tokenizer = tokenizer_metadata(
        &read_json(&folder.join("tokenizer.json"))?,
        &tokenizer_config,
        vocab_rows as usize,
    )?;

    let folder_name = folder.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let mut metadata = vec![
        ("general.architecture".to_string(), MetadataValue::String(config.architecture.to_string())),
        ("general.name".to_string(), MetadataValue::String(folder_name)),
        ("general.file_type".to_string(), MetadataValue::U32(quant.file_type())),
    ];
    metadata.extend(config.metadata.iter().cloned());
    metadata.extend(tokenizer);

    // Refused before writing rather than when the disk fills.
    let elements: u64 = tensors.iter().map(|t| t.shape.iter().product::<u64>()).sum::<u64>()
        + config.extra_tensors.iter().map(|(_, values)| values.len() as u64).sum::<u64>();
    ensure_free_space(out_dir, quant.max_bytes(elements))?;
    let mut files = paths
        .iter()
        .map(|path| File::open(path).map_err(ConvertError::io(path)))
        .collect::<Result<Vec<_>, _>>()?;
    let total: u64 = tensors.iter().map(|t| t.bytes).sum();
    let mut done = 0u64;
    let mut writer = RdrrWriter::create(out_dir, shard_limit)?;
    for (name, values) in &config.extra_tensors {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        writer.add_tensor(name, GgmlType::F32, &[values.len() as u64], &mut |out| out.write_all(&bytes))?;
    }
    for tensor in &tensors {
        if cancel.is_cancelled() {
            return Err(ConvertError::Cancelled);
        }
        let ty = quant.tensor_type(&tensor.name, &tensor.shape, config.n_layers, config.tied_embeddings);
        let dims: Vec<u64> = tensor.shape.iter().rev().copied().collect();
        let transform = config.transform(&tensor.name);
        let file = &mut files[tensor.file];
        let mut failure = None;
        writer
            .add_tensor(&tensor.name, ty, &dims, &mut |out| {
                convert_rows(file, tensor, ty, transform, &mut |bytes| out.write_all(bytes)).map_err(
                    |error| {
                        let message = error.to_string();
                        failure = Some(error);
                        std::io::Error::other(message)
                    },
                )
            })
            .map_err(|error| failure.take().unwrap_or(error.into()))?;
        done += tensor.bytes;
        progress(ConvertProgress { tensor: tensor.name.clone(), done_bytes: done, total_bytes: total });
    }
    Ok(writer.finish(metadata.iter().map(|(key, value)| (key.as_str(), value)))?)
}

/// Reads `tensor` a few rows at a time, widens to f32, transforms them (permutes Q/K heads,
/// adds Gemma's 1 to norms) and hands the rows in `ty` to `out`.
fn convert_rows(
    file: &mut File,
    tensor: &SourceTensor,
    ty: GgmlType,
    transform: RowTransform,
    out: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), ConvertError> {
    let io_error = |source| ConvertError::Io { path: PathBuf::from(&tensor.hf_name), source };
    let row_len = *tensor.shape.last().expect("shapes have a dimension") as usize;
    let rows = (tensor.shape.iter().product::<u64>() / row_len as u64) as usize;
    let element_bytes = tensor.dtype.bitsize() / 8;
    let head_rows = match transform {
        RowTransform::PermuteHeads(heads)
            if heads > 0
                && rows.is_multiple_of(heads as usize)
                && (rows / heads as usize).is_multiple_of(2) =>
        {
            rows / heads as usize
        }
        RowTransform::PermuteHeads(_) => {
            return Err(ConvertError::Shape { tensor: tensor.hf_name.clone(), shape: tensor.shape.clone() })
        }
        RowTransform::None | RowTransform::AddOne => 1,
    };
    let chunk_rows = (CHUNK_BYTES / (row_len * element_bytes)).max(1).next_multiple_of(head_rows).min(rows);
    let mut raw = vec![0u8; chunk_rows * row_len * element_bytes];
    let mut values = vec![0f32; chunk_rows * row_len];
    let permutes = matches!(transform, RowTransform::PermuteHeads(_));
    let mut permuted = vec![0f32; if permutes { chunk_rows * row_len } else { 0 }];
    file.seek(SeekFrom::Start(tensor.offset)).map_err(io_error)?;
    let mut row = 0;
    while row < rows {
        let n = chunk_rows.min(rows - row);
        let raw = &mut raw[..n * row_len * element_bytes];
        file.read_exact(raw).map_err(io_error)?;
        let values = &mut values[..n * row_len];
        widen(tensor, raw, values)?;
        if transform == RowTransform::AddOne {
            values.iter_mut().for_each(|value| *value += 1.0);
        }
        let rows_out: &[f32] = if permutes {
            let permuted = &mut permuted[..n * row_len];
            permute_for_interleaved_rope(values, permuted, head_rows, row_len);
            permuted
        } else {
            values
        };
        let bytes = quantize_row(ty, rows_out)
            .map_err(|source| ConvertError::Quantize { tensor: tensor.hf_name.clone(), source })?;
        out(&bytes).map_err(io_error)?;
        row += n;
    }
    Ok(())
}

/// Each head's rows (first half, second half) become interleaved pairs: row `2i + j` of a
/// head is its row `j * half + i`, so RoPE's interleaved pairs rotate what transformers'
/// half-split pairs rotate (llama.cpp's converter permutes the same way).
fn permute_for_interleaved_rope(rows: &[f32], out: &mut [f32], head_rows: usize, row_len: usize) {
    let half = head_rows / 2;
    for (head_in, head_out) in
        rows.chunks_exact(head_rows * row_len).zip(out.chunks_exact_mut(head_rows * row_len))
    {
        for i in 0..half {
            for j in 0..2 {
                let from = (j * half + i) * row_len;
                let to = (2 * i + j) * row_len;
                head_out[to..to + row_len].copy_from_slice(&head_in[from..from + row_len]);
            }
        }
    }
}

fn widen(tensor: &SourceTensor, raw: &[u8], out: &mut [f32]) -> Result<(), ConvertError> {
    match tensor.dtype {
        Dtype::F32 => {
            for (value, bytes) in out.iter_mut().zip(raw.chunks_exact(4)) {
                *value = f32::from_le_bytes(bytes.try_into().expect("4 bytes"));
            }
        }
        Dtype::F16 => {
            for (value, bytes) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *value = half::f16::from_le_bytes([bytes[0], bytes[1]]).to_f32();
            }
        }
        Dtype::BF16 => {
            for (value, bytes) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *value = half::bf16::from_le_bytes([bytes[0], bytes[1]]).to_f32();
            }
        }
        other => {
            return Err(ConvertError::UnsupportedDtype {
                tensor: tensor.hf_name.clone(),
                dtype: format!("{other:?}"),
            })
        }
    }
    Ok(())
}

/// Every tensor of the folder's `*.safetensors` files that the engine uses, in file order.
/// Each header is parsed from a map of its file (only the header's pages are touched); the
/// tensor data is read later with plain reads, so the model is never resident as a whole.
fn list_tensors(folder: &Path, config: &HfConfig) -> Result<(Vec<PathBuf>, Vec<SourceTensor>), ConvertError> {
    let entries = std::fs::read_dir(folder).map_err(ConvertError::io(folder))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(ConvertError::io(folder))?.path();
        if path.extension().is_some_and(|ext| ext == "safetensors") {
            paths.push(path);
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(ConvertError::NoSafetensors { folder: folder.to_path_buf() });
    }
    let mut tensors = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        let file = File::open(path).map_err(ConvertError::io(path))?;
        // SAFETY: read-only; the file changing under the conversion is outside what we guard.
        let map = unsafe { Mmap::map(&file) }.map_err(ConvertError::io(path))?;
        let (header_len, metadata) = SafeTensors::read_metadata(&map)
            .map_err(|error| ConvertError::Safetensors { path: path.clone(), reason: error.to_string() })?;
        let data_start = 8 + header_len as u64;
        for (hf_name, info) in metadata.tensors() {
            let Some(name) = config.our_tensor_name(&hf_name) else {
                tracing::debug!(tensor = %hf_name, "not used by the engine; skipped");
                continue;
            };
            let (start, end) = info.data_offsets;
            tensors.push(SourceTensor {
                file: index,
                hf_name,
                name,
                dtype: info.dtype,
                shape: info.shape.iter().map(|&d| d as u64).collect(),
                offset: data_start + start as u64,
                bytes: (end - start) as u64,
            });
        }
    }
    tensors.sort_by_key(|t| (t.file, t.offset));
    if let Some(scalar) = tensors.iter().find(|t| t.shape.is_empty() || t.shape.contains(&0)) {
        return Err(ConvertError::Shape { tensor: scalar.hf_name.clone(), shape: scalar.shape.clone() });
    }
    Ok((paths, tensors))
}

fn read_json(path: &Path) -> Result<Value, ConvertError> {
    let file = File::open(path).map_err(ConvertError::io(path))?;
    let mut text = Vec::new();
    file.take(MAX_JSON_BYTES + 1).read_to_end(&mut text).map_err(ConvertError::io(path))?;
    if text.len() as u64 > MAX_JSON_BYTES {
        return Err(ConvertError::Json {
            path: path.to_path_buf(),
            reason: format!("larger than {MAX_JSON_BYTES} bytes"),
        });
    }
    serde_json::from_slice(&text)
        .map_err(|error| ConvertError::Json { path: path.to_path_buf(), reason: error.to_string() })
}
