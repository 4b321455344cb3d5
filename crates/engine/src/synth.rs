//! Synthetic models: valid GGUF files with random weights in the tensor types llama.cpp's
//! Q4_K_M mix gives each tensor of the shape, and a real tokenizer copied from a donor GGUF.
//! Large models reach a remote GPU this way: the file is made there, not carried.

use std::{io::Write, path::Path};

use serde::Serialize;

use crate::{
    gguf::{GgmlType, GgufError, GgufFile, GgufWriteError, GgufWriter, MetadataValue, StringArray},
    quant::random_quantized,
};

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error(
        "unknown synthetic shape '{arch} {size}' (gemma3: 270m, 1b, 4b; llama: llama3.2-1b, qwen2.5-1.5b)"
    )]
    UnknownShape { arch: String, size: String },
    #[error("tokenizer donor: {0}")]
    Donor(#[from] GgufError),
    #[error("tokenizer donor has no tokenizer.ggml.tokens")]
    DonorWithoutTokens,
    #[error("tokenizer donor has {donor} tokens, more than the {shape} of this shape's vocabulary")]
    DonorVocabTooLarge { donor: usize, shape: u32 },
    #[error(transparent)]
    Write(#[from] GgufWriteError),
}

/// The dimensions of a synthetic model.
#[derive(Debug, Clone, Serialize)]
pub struct SynthShape {
    pub arch: &'static str,
    pub label: &'static str,
    pub hidden: u32,
    pub layers: u32,
    pub ffn: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub vocab: u32,
    pub sliding_window: u32,
    pub rope_theta: f32,
}

impl SynthShape {
    pub fn named(arch: &str, size: &str) -> Result<SynthShape, SynthError> {
        let gemma = |label, hidden, layers, ffn, heads, kv_heads, window| SynthShape {
            arch: "gemma3",
            label,
            hidden,
            layers,
            ffn,
            heads,
            kv_heads,
            head_dim: 256,
            vocab: 262_144,
            sliding_window: window,
            rope_theta: 1_000_000.0,
        };
        let llama = |label, hidden, layers, ffn, heads, kv_heads, head_dim, vocab, rope_theta| SynthShape {
            arch: "llama",
            label,
            hidden,
            layers,
            ffn,
            heads,
            kv_heads,
            head_dim,
            vocab,
            sliding_window: 0,
            rope_theta,
        };
        Ok(match (arch, size.to_ascii_lowercase().as_str()) {
            ("gemma3", "270m") => gemma("270M", 640, 18, 2048, 4, 1, 512),
            ("gemma3", "1b") => gemma("1B", 1152, 26, 6912, 4, 1, 512),
            ("gemma3", "4b") => gemma("4B", 2560, 34, 10240, 8, 4, 1024),
            ("llama", "llama3.2-1b" | "1b") => {
                llama("Llama-3.2-1B", 2048, 16, 8192, 32, 8, 64, 128_256, 500_000.0)
            }
            ("llama", "qwen2.5-1.5b" | "1.5b") => {
                llama("Qwen2.5-1.5B", 1536, 28, 8960, 12, 2, 128, 151_936, 1_000_000.0)
            }
            _ => return Err(SynthError::UnknownShape { arch: arch.to_string(), size: size.to_string() }),
        })
    }
}

/// llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every third
/// one between, get the larger type in the Q4_K_M mix.
fn use_more_bits(layer: u32, layers: u32) -> bool {
    layer < layers / 8 || layer >= 7 * layers / 8 || (layer.wrapping_sub(layers / 8)) % 3 == 2
}

/// The Q4_K_M type of a matrix whose rows have `row_len` values: K-quants need whole
/// 256-value super-blocks, and llama.cpp falls back to Q5_0 (or Q8_0 for Q6_K) otherwise.
fn q4_k_m_type(wanted: GgmlType, row_len: u32) -> GgmlType {
    if row_len.is_multiple_of(256) {
        return wanted;
    }
    match wanted {
        GgmlType::Q6_K => GgmlType::Q8_0,
        _ => GgmlType::Q5_0,
    }
}

fn gemma_v_type(more_bits: bool) -> GgmlType {
    if more_bits {
        GgmlType::Q8_0
    } else {
        GgmlType::Q5_0
    }
}

/// Writes a synthetic model of `shape` to `out`, with the tokenizer keys of `donor`.
pub fn write_synthetic(
    shape: &SynthShape,
    donor: &GgufFile,
    out: &Path,
    seed: u64,
) -> Result<u64, SynthError> {
    let mut writer = GgufWriter::new();
    let arch = shape.arch;
    let key = |name: &str| format!("{arch}.{name}");
    writer.add_metadata("general.architecture", MetadataValue::String(arch.to_string()))?;
    writer.add_metadata(
        "general.name",
        MetadataValue::String(format!("DOPPLER synthetic {arch} {}", shape.label)),
    )?;
    writer.add_metadata("general.file_type", MetadataValue::U32(15))?;
    writer.add_metadata("general.quantization_version", MetadataValue::U32(2))?;
    writer.add_metadata(key("context_length"), MetadataValue::U32(32_768))?;
    writer.add_metadata(key("embedding_length"), MetadataValue::U32(shape.hidden))?;
    writer.add_metadata(key("block_count"), MetadataValue::U32(shape.layers))?;
    writer.add_metadata(key("feed_forward_length"), MetadataValue::U32(shape.ffn))?;
    writer.add_metadata(key("attention.head_count"), MetadataValue::U32(shape.heads))?;
    writer.add_metadata(key("attention.head_count_kv"), MetadataValue::U32(shape.kv_heads))?;
    writer.add_metadata(key("attention.key_length"), MetadataValue::U32(shape.head_dim))?;
    writer.add_metadata(key("attention.value_length"), MetadataValue::U32(shape.head_dim))?;
    writer.add_metadata(key("attention.layer_norm_rms_epsilon"), MetadataValue::F32(1e-6))?;
    writer.add_metadata(key("rope.freq_base"), MetadataValue::F32(shape.rope_theta))?;
    if arch == "gemma3" {
        writer.add_metadata(key("attention.sliding_window"), MetadataValue::U32(shape.sliding_window))?;
    } else {
        writer.add_metadata(key("rope.dimension_count"), MetadataValue::U32(shape.head_dim))?;
        writer.add_metadata(key("vocab_size"), MetadataValue::U32(shape.vocab))?;
    }
    copy_tokenizer(donor, shape.vocab, &mut writer)?;

    let hidden = u64::from(shape.hidden);
    let q_dim = u64::from(shape.heads * shape.head_dim);
    let kv_dim = u64::from(shape.kv_heads * shape.head_dim);
    let ffn = u64::from(shape.ffn);
    let mut tensor_seed = seed;
    let mut matrix = |writer: &mut GgufWriter,
                      name: String,
                      row_len: u64,
                      rows: u64,
                      ty: GgmlType|
     -> Result<(), SynthError> {
        tensor_seed = tensor_seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let this_seed = tensor_seed;
        writer.add_tensor_streamed(name, &[row_len, rows], ty, move |out: &mut dyn Write| {
            // Bounded memory: a few thousand rows at a time.
            let rows_per_piece = (1u64 << 24) / row_len.max(1);
            let mut done = 0;
            while done < rows {
                let piece = rows_per_piece.max(1).min(rows - done);
                out.write_all(&random_quantized(
                    ty,
                    row_len as usize,
                    piece as usize,
                    this_seed.wrapping_add(done),
                ))?;
                done += piece;
            }
            Ok(())
        })?;
        Ok(())
    };
    let norm = |writer: &mut GgufWriter, name: String, len: u64| -> Result<(), SynthError> {
        let ones: Vec<u8> = (0..len).flat_map(|_| 1.0f32.to_le_bytes()).collect();
        writer.add_tensor(name, &[len], GgmlType::F32, ones)?;
        Ok(())
    };

    let gemma = arch == "gemma3";
    let embedding_type = if gemma { GgmlType::Q8_0 } else { q4_k_m_type(GgmlType::Q6_K, shape.hidden) };
    matrix(&mut writer, "token_embd.weight".into(), hidden, u64::from(shape.vocab), embedding_type)?;
    norm(&mut writer, "output_norm.weight".into(), hidden)?;
    for layer in 0..shape.layers {
        let name = |suffix: &str| format!("blk.{layer}.{suffix}.weight");
        let more_bits = use_more_bits(layer, shape.layers);
        let base = q4_k_m_type(GgmlType::Q4_K, shape.hidden);
        let v_type = if gemma {
            gemma_v_type(more_bits)
        } else if more_bits {
            q4_k_m_type(GgmlType::Q6_K, shape.hidden)
        } else {
            base
        };
        let down_type = q4_k_m_type(if more_bits { GgmlType::Q6_K } else { GgmlType::Q4_K }, shape.ffn);
        norm(&mut writer, name("attn_norm"), hidden)?;
        matrix(&mut writer, name("attn_q"), hidden, q_dim, base)?;
        matrix(&mut writer, name("attn_k"), hidden, kv_dim, base)?;
        matrix(&mut writer, name("attn_v"), hidden, kv_dim, v_type)?;
        matrix(&mut writer, name("attn_output"), q_dim, hidden, q4_k_m_type(GgmlType::Q4_K, q_dim as u32))?;
        norm(&mut writer, name("ffn_norm"), hidden)?;
        matrix(&mut writer, name("ffn_gate"), hidden, ffn, base)?;
        matrix(&mut writer, name("ffn_up"), hidden, ffn, base)?;
        matrix(&mut writer, name("ffn_down"), ffn, hidden, down_type)?;
        if gemma {
            norm(&mut writer, name("attn_q_norm"), u64::from(shape.head_dim))?;
            norm(&mut writer, name("attn_k_norm"), u64::from(shape.head_dim))?;
            norm(&mut writer, name("post_attention_norm"), hidden)?;
            norm(&mut writer, name("post_ffw_norm"), hidden)?;
        }
    }
    writer.write_file(out)?;
    Ok(std::fs::metadata(out).map(|m| m.len()).unwrap_or(0))
}

/// Copies every `tokenizer.*` key of `donor`, padding the vocabulary with unused tokens up to
/// `vocab` so the embedding of the shape and the tokenizer agree.
fn copy_tokenizer(donor: &GgufFile, vocab: u32, writer: &mut GgufWriter) -> Result<(), SynthError> {
    let tokens =
        donor.metadata().get_str_array("tokenizer.ggml.tokens")?.ok_or(SynthError::DonorWithoutTokens)?;
    if tokens.len() > vocab as usize {
        return Err(SynthError::DonorVocabTooLarge { donor: tokens.len(), shape: vocab });
    }
    let padding = vocab as usize - tokens.len();
    for (key, value) in donor.metadata().iter().filter(|(key, _)| key.starts_with("tokenizer.")) {
        let value = match (key, padding) {
            (_, 0) => value.clone(),
            ("tokenizer.ggml.tokens", _) => {
                let mut padded = StringArray::new();
                for token in &tokens {
                    padded.push(token);
                }
                for i in 0..padding {
                    padded.push(&format!("<synthetic_unused_{i}>"));
                }
                MetadataValue::from(padded)
            }
            ("tokenizer.ggml.scores", _) => {
                let mut scores = donor.metadata().get_f32_array(key)?.unwrap_or_default();
                scores.resize(vocab as usize, -1e9);
                MetadataValue::from(scores)
            }
            ("tokenizer.ggml.token_type", _) => {
                let mut types = donor.metadata().get_i32_array(key)?.unwrap_or_default();
                // 5: unused.
                types.resize(vocab as usize, 5);
                MetadataValue::from(types)
            }
            _ => value.clone(),
        };
        writer.add_metadata(key.to_string(), value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_k_m_mix_matches_llama_cpp_for_gemma_270m() {
        // The real Gemma 3 270M Q4_K_M file has 9 Q6_K ffn_down and 9 Q8_0 attn_v of 18 layers.
        let more = (0..18).filter(|&l| use_more_bits(l, 18)).count();
        assert_eq!(more, 9);
        assert_eq!(q4_k_m_type(GgmlType::Q4_K, 640), GgmlType::Q5_0);
        assert_eq!(q4_k_m_type(GgmlType::Q4_K, 1024), GgmlType::Q4_K);
        assert_eq!(q4_k_m_type(GgmlType::Q6_K, 2048), GgmlType::Q6_K);
    }

    #[test]
    fn unknown_shapes_are_refused() {
        assert!(matches!(SynthShape::named("gemma3", "7b"), Err(SynthError::UnknownShape { .. })));
        assert!(SynthShape::named("llama", "qwen2.5-1.5b").is_ok());
    }
}
