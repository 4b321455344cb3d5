//! Synthetic models: valid GGUF files with random weights in the tensor types llama.cpp's
//! Q4_K_M mix gives each tensor of the shape, and a real tokenizer copied from a donor GGUF.
//! Large models reach a remote GPU this way: the file is made there, not carried.

use std::{io::Write, path::Path};

use serde::Serialize;

use crate::{
    gguf::{GgmlType, GgufError, GgufFile, GgufWriteError, GgufWriter, MetadataValue, StringArray},
    model::Llama3Scaling,
    quant::{random_quantized, SUPPORTED_TYPES},
};

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("unknown synthetic shape '{arch} {size}' (known: {known})")]
    UnknownShape { arch: String, size: String, known: String },
    #[error("tokenizer donor: {0}")]
    Donor(#[from] GgufError),
    #[error("tokenizer donor has no tokenizer.ggml.tokens")]
    DonorWithoutTokens,
    #[error("tokenizer donor has {donor} tokens, more than the {shape} of this shape's vocabulary")]
    DonorVocabTooLarge { donor: usize, shape: u32 },
    #[error("unknown weights '{name}' (Q4_K_M, or one of the types the kernels read, e.g. IQ4_XS)")]
    UnknownWeights { name: String },
    #[error(transparent)]
    Write(#[from] GgufWriteError),
}

/// RoPE scaling a synthetic model carries, as its architecture's GGUF stores it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum SynthRope {
    Plain,
    /// Gemma 3 4B+: positions of global layers divided by `factor`.
    Linear {
        factor: f32,
    },
    /// Llama 3.1/3.2: a `rope_freqs.weight` tensor of per-pair frequency divisors.
    Llama3 {
        factor: f32,
        original_context: u32,
    },
    /// Phi 3.5: `rope_factors_short/long.weight` and the original context.
    LongRope {
        original_context: u32,
    },
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
    pub context: u32,
    pub sliding_window: u32,
    pub rope_theta: f32,
    pub rope: SynthRope,
    /// Whether the LM head is the token embedding.
    pub tied: bool,
}

/// Every named shape: (architecture, size).
pub const SHAPES: [(&str, &str); 17] = [
    ("gemma3", "270m"),
    ("gemma3", "1b"),
    ("gemma3", "4b"),
    ("gemma3", "12b"),
    ("gemma3", "27b"),
    ("llama", "smollm2-135m"),
    ("llama", "llama3.2-1b"),
    ("llama", "llama3.2-3b"),
    ("llama", "llama3.1-8b"),
    ("llama", "llama3.1-70b"),
    ("llama", "mistral-7b"),
    ("qwen2", "qwen2.5-1.5b"),
    ("qwen2", "qwen2.5-7b"),
    ("qwen3", "qwen3-4b"),
    ("phi3", "phi3.5-mini"),
    // Before qwen2 had its own architecture these were llama shapes; the names still work.
    ("llama", "1b"),
    ("llama", "qwen2.5-1.5b"),
];

impl SynthShape {
    pub fn named(arch: &str, size: &str) -> Result<SynthShape, SynthError> {
        let shape =
            |arch, label, [hidden, layers, ffn, heads, kv_heads, head_dim, vocab, context]: [u32; 8]| {
                SynthShape {
                    arch,
                    label,
                    hidden,
                    layers,
                    ffn,
                    heads,
                    kv_heads,
                    head_dim,
                    vocab,
                    context,
                    sliding_window: 0,
                    rope_theta: 10_000.0,
                    rope: SynthRope::Plain,
                    tied: false,
                }
            };
        let gemma = |label, dims: [u32; 5], window, rope| SynthShape {
            sliding_window: window,
            rope_theta: 1_000_000.0,
            rope,
            tied: true,
            ..shape("gemma3", label, [dims[0], dims[1], dims[2], dims[3], dims[4], 256, 262_144, 131_072])
        };
        let linear = SynthRope::Linear { factor: 8.0 };
        let llama3 = |factor| SynthRope::Llama3 { factor, original_context: 8192 };
        Ok(match (arch, size.to_ascii_lowercase().as_str()) {
            ("gemma3", "270m") => {
                SynthShape { context: 32_768, ..gemma("270M", [640, 18, 2048, 4, 1], 512, SynthRope::Plain) }
            }
            ("gemma3", "1b") => {
                SynthShape { context: 32_768, ..gemma("1B", [1152, 26, 6912, 4, 1], 512, SynthRope::Plain) }
            }
            ("gemma3", "4b") => gemma("4B", [2560, 34, 10240, 8, 4], 1024, linear),
            ("gemma3", "12b") => gemma("12B", [3840, 48, 15360, 16, 8], 1024, linear),
            ("gemma3", "27b") => {
                SynthShape { head_dim: 128, ..gemma("27B", [5376, 62, 21504, 32, 16], 1024, linear) }
            }
            ("llama", "smollm2-135m") => SynthShape {
                rope_theta: 100_000.0,
                tied: true,
                ..shape("llama", "SmolLM2-135M", [576, 30, 1536, 9, 3, 64, 49_152, 8192])
            },
            ("llama", "llama3.2-1b" | "1b") => SynthShape {
                rope_theta: 500_000.0,
                rope: llama3(32.0),
                tied: true,
                ..shape("llama", "Llama-3.2-1B", [2048, 16, 8192, 32, 8, 64, 128_256, 131_072])
            },
            ("llama", "llama3.2-3b") => SynthShape {
                rope_theta: 500_000.0,
                rope: llama3(32.0),
                tied: true,
                ..shape("llama", "Llama-3.2-3B", [3072, 28, 8192, 24, 8, 128, 128_256, 131_072])
            },
            ("llama", "llama3.1-8b") => SynthShape {
                rope_theta: 500_000.0,
                rope: llama3(8.0),
                ..shape("llama", "Llama-3.1-8B", [4096, 32, 14_336, 32, 8, 128, 128_256, 131_072])
            },
            ("llama", "llama3.1-70b") => SynthShape {
                rope_theta: 500_000.0,
                rope: llama3(8.0),
                ..shape("llama", "Llama-3.1-70B", [8192, 80, 28_672, 64, 8, 128, 128_256, 131_072])
            },
            ("llama", "mistral-7b") => SynthShape {
                rope_theta: 1_000_000.0,
                ..shape("llama", "Mistral-7B-v0.3", [4096, 32, 14_336, 32, 8, 128, 32_768, 32_768])
            },
            ("qwen2" | "llama", "qwen2.5-1.5b") => SynthShape {
                rope_theta: 1_000_000.0,
                tied: true,
                ..shape("qwen2", "Qwen2.5-1.5B", [1536, 28, 8960, 12, 2, 128, 151_936, 32_768])
            },
            ("qwen2", "qwen2.5-7b") => SynthShape {
                rope_theta: 1_000_000.0,
                ..shape("qwen2", "Qwen2.5-7B", [3584, 28, 18_944, 28, 4, 128, 152_064, 32_768])
            },
            ("qwen3", "qwen3-4b") => SynthShape {
                rope_theta: 1_000_000.0,
                tied: true,
                ..shape("qwen3", "Qwen3-4B", [2560, 36, 9728, 32, 8, 128, 151_936, 40_960])
            },
            ("phi3", "phi3.5-mini") => SynthShape {
                rope: SynthRope::LongRope { original_context: 4096 },
                ..shape("phi3", "Phi-3.5-mini", [3072, 32, 8192, 32, 32, 96, 32_064, 131_072])
            },
            _ => {
                let known = SHAPES.iter().map(|(arch, size)| format!("{arch} {size}")).collect::<Vec<_>>();
                return Err(SynthError::UnknownShape {
                    arch: arch.to_string(),
                    size: size.to_string(),
                    known: known.join(", "),
                });
            }
        })
    }

    /// The same architecture and features in a model small enough for a test: two layers,
    /// hidden 256, four query heads (kv heads in the shape's ratio), the head dimension kept.
    pub fn tiny(&self, vocab: u32) -> SynthShape {
        let group = (self.heads / self.kv_heads).clamp(1, 4);
        SynthShape {
            hidden: 256,
            layers: 2,
            ffn: 512,
            heads: 4,
            kv_heads: 4 / group,
            vocab,
            sliding_window: self.sliding_window.min(16),
            ..self.clone()
        }
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

/// The weight types of a synthetic model's layer matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SynthWeights {
    /// llama.cpp's Q4_K_M mix.
    Q4KM,
    /// One type for every layer matrix, as `llama-quantize --pure` (the embedding and output
    /// keep the Q4_K_M mix's types): how one weight type's kernels are measured on a real shape.
    Pure(GgmlType),
}

impl SynthWeights {
    /// `Q4_K_M`, or the name of a type the kernels read (e.g. `IQ4_XS`).
    pub fn parse(name: &str) -> Result<Self, SynthError> {
        if name.eq_ignore_ascii_case("Q4_K_M") {
            return Ok(Self::Q4KM);
        }
        SUPPORTED_TYPES
            .into_iter()
            .find(|ty| ty.name().eq_ignore_ascii_case(name))
            .map(Self::Pure)
            .ok_or_else(|| SynthError::UnknownWeights { name: name.to_string() })
    }
}

/// `wanted` where rows of `row_len` values hold whole blocks of it, else Q8_0 (or F16).
fn pure_type(wanted: GgmlType, row_len: u32) -> GgmlType {
    let row_len = row_len as usize;
    if row_len.is_multiple_of(wanted.block_len()) {
        wanted
    } else if row_len.is_multiple_of(GgmlType::Q8_0.block_len()) {
        GgmlType::Q8_0
    } else {
        GgmlType::F16
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
    weights: SynthWeights,
) -> Result<u64, SynthError> {
    let mut writer = GgufWriter::new();
    let arch = shape.arch;
    let key = |name: &str| format!("{arch}.{name}");
    writer.add_metadata("general.architecture", MetadataValue::String(arch.to_string()))?;
    writer.add_metadata(
        "general.name",
        MetadataValue::String(format!("DOPPLER synthetic {arch} {}", shape.label)),
    )?;
    if weights == SynthWeights::Q4KM {
        // llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M.
        writer.add_metadata("general.file_type", MetadataValue::U32(15))?;
    }
    writer.add_metadata("general.quantization_version", MetadataValue::U32(2))?;
    writer.add_metadata(key("context_length"), MetadataValue::U32(shape.context))?;
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
    match shape.rope {
        SynthRope::Plain | SynthRope::Llama3 { .. } => {}
        SynthRope::Linear { factor } => {
            writer.add_metadata(key("rope.scaling.type"), MetadataValue::String("linear".into()))?;
            writer.add_metadata(key("rope.scaling.factor"), MetadataValue::F32(factor))?;
        }
        SynthRope::LongRope { original_context } => {
            writer.add_metadata(
                key("rope.scaling.original_context_length"),
                MetadataValue::U32(original_context),
            )?;
            let scale = f64::from(shape.context) / f64::from(original_context);
            let factor = (1.0 + scale.ln() / f64::from(original_context).ln()).sqrt();
            writer.add_metadata(key("rope.scaling.attn_factor"), MetadataValue::F32(factor as f32))?;
        }
    }
    copy_tokenizer(donor, shape.vocab, reserved_tokens(arch), &mut writer)?;

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
    let vector = |writer: &mut GgufWriter, name: String, values: Vec<f32>| -> Result<(), SynthError> {
        let len = values.len() as u64;
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        writer.add_tensor(name, &[len], GgmlType::F32, bytes)?;
        Ok(())
    };
    let ones = |len: u64| vec![1.0f32; len as usize];
    // Small deterministic values, for biases.
    let small = |len: u64, salt: u64| -> Vec<f32> {
        (0..len)
            .map(|i| ((i.wrapping_mul(2_654_435_761).wrapping_add(salt) % 1000) as f32 / 1000.0 - 0.5) * 0.1)
            .collect()
    };

    let gemma = arch == "gemma3";
    let pairs = u64::from(shape.head_dim / 2);
    match shape.rope {
        SynthRope::Llama3 { factor, original_context } => {
            let scaling =
                Llama3Scaling { factor, low_freq_factor: 1.0, high_freq_factor: 4.0, original_context };
            let divisors = scaling
                .divisors(shape.rope_theta, shape.head_dim)
                .expect("the named llama3 shapes have valid scaling");
            vector(&mut writer, "rope_freqs.weight".into(), divisors)?;
        }
        SynthRope::LongRope { .. } => {
            // Phi-3.5's factors rise from ~1 at high frequencies; long ones far more.
            let short = (0..pairs).map(|i| 1.0 + 0.2 * i as f32 / pairs as f32).collect();
            let long = (0..pairs).map(|i| 1.0 + 40.0 * (i as f32 / pairs as f32).powi(2)).collect();
            vector(&mut writer, "rope_factors_short.weight".into(), short)?;
            vector(&mut writer, "rope_factors_long.weight".into(), long)?;
        }
        SynthRope::Plain | SynthRope::Linear { .. } => {}
    }
    let embedding_type = if gemma { GgmlType::Q8_0 } else { q4_k_m_type(GgmlType::Q6_K, shape.hidden) };
    matrix(&mut writer, "token_embd.weight".into(), hidden, u64::from(shape.vocab), embedding_type)?;
    if !shape.tied {
        let ty = q4_k_m_type(GgmlType::Q6_K, shape.hidden);
        matrix(&mut writer, "output.weight".into(), hidden, u64::from(shape.vocab), ty)?;
    }
    vector(&mut writer, "output_norm.weight".into(), ones(hidden))?;
    for layer in 0..shape.layers {
        let name = |suffix: &str| format!("blk.{layer}.{suffix}.weight");
        let bias = |suffix: &str| format!("blk.{layer}.{suffix}.bias");
        let more_bits = use_more_bits(layer, shape.layers);
        let layer_type = |q4_k_m: GgmlType, row_len: u32| match weights {
            SynthWeights::Q4KM => q4_k_m_type(q4_k_m, row_len),
            SynthWeights::Pure(ty) => pure_type(ty, row_len),
        };
        let base = layer_type(GgmlType::Q4_K, shape.hidden);
        let v_type = match weights {
            SynthWeights::Q4KM if gemma => gemma_v_type(more_bits),
            _ if more_bits => layer_type(GgmlType::Q6_K, shape.hidden),
            _ => base,
        };
        let down_type = layer_type(if more_bits { GgmlType::Q6_K } else { GgmlType::Q4_K }, shape.ffn);
        vector(&mut writer, name("attn_norm"), ones(hidden))?;
        if arch == "phi3" {
            // llama.cpp's Q4_K_M gives a fused attn_qkv Q5_K.
            let ty = layer_type(GgmlType::Q5_K, shape.hidden);
            matrix(&mut writer, name("attn_qkv"), hidden, q_dim + 2 * kv_dim, ty)?;
        } else {
            matrix(&mut writer, name("attn_q"), hidden, q_dim, base)?;
            matrix(&mut writer, name("attn_k"), hidden, kv_dim, base)?;
            matrix(&mut writer, name("attn_v"), hidden, kv_dim, v_type)?;
        }
        if arch == "qwen2" {
            vector(&mut writer, bias("attn_q"), small(q_dim, 1))?;
            vector(&mut writer, bias("attn_k"), small(kv_dim, 2))?;
            vector(&mut writer, bias("attn_v"), small(kv_dim, 3))?;
        }
        if gemma || arch == "qwen3" {
            vector(&mut writer, name("attn_q_norm"), ones(u64::from(shape.head_dim)))?;
            vector(&mut writer, name("attn_k_norm"), ones(u64::from(shape.head_dim)))?;
        }
        matrix(&mut writer, name("attn_output"), q_dim, hidden, layer_type(GgmlType::Q4_K, q_dim as u32))?;
        vector(&mut writer, name("ffn_norm"), ones(hidden))?;
        if arch == "phi3" {
            matrix(&mut writer, name("ffn_up"), hidden, 2 * ffn, base)?;
        } else {
            matrix(&mut writer, name("ffn_gate"), hidden, ffn, base)?;
            matrix(&mut writer, name("ffn_up"), hidden, ffn, base)?;
        }
        matrix(&mut writer, name("ffn_down"), ffn, hidden, down_type)?;
        if gemma {
            vector(&mut writer, name("post_attention_norm"), ones(hidden))?;
            vector(&mut writer, name("post_ffw_norm"), ones(hidden))?;
        }
    }
    writer.write_file(out)?;
    Ok(std::fs::metadata(out).map(|m| m.len()).unwrap_or(0))
}

/// Tokens a vocabulary of `arch` must hold whatever its donor: llama.cpp looks Phi 3's up by
/// text (to set their strip attributes) and refuses the vocabulary without them.
fn reserved_tokens(arch: &str) -> &'static [&'static str] {
    match arch {
        "phi3" => &["<unk>", "<s>", "</s>", "<|endoftext|>"],
        _ => &[],
    }
}

/// Copies every `tokenizer.*` key of `donor`, padding the vocabulary with unused tokens up to
/// `vocab` so the embedding of the shape and the tokenizer agree; the padding starts with the
/// `reserved` tokens the donor lacks.
fn copy_tokenizer(
    donor: &GgufFile,
    vocab: u32,
    reserved: &[&str],
    writer: &mut GgufWriter,
) -> Result<(), SynthError> {
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
                // Short names: building a SentencePiece vocabulary hashes every split of every
                // token, bounded by tokenizer::limits::MAX_SPLIT_WORK, which 262k long names
                // would exceed.
                let missing = reserved.iter().filter(|token| !tokens.contains(*token));
                let names =
                    missing.map(|token| token.to_string()).chain((0..).map(|i| format!("<synth{i}>")));
                for name in names.take(padding) {
                    padded.push(&name);
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
    fn a_phi3_vocabulary_holds_the_tokens_llama_cpp_looks_up() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/phi3/model.gguf");
        let donor = GgufFile::open(&fixture).unwrap();
        let donor_tokens = donor.metadata().get_str_array("tokenizer.ggml.tokens").unwrap().unwrap().len();
        let vocab = donor_tokens as u32 + 16;
        let mut writer = GgufWriter::new();
        copy_tokenizer(&donor, vocab, reserved_tokens("phi3"), &mut writer).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("vocab.gguf");
        writer.write_file(&out).unwrap();
        let written = GgufFile::open(&out).unwrap();
        let tokens = written.metadata().get_str_array("tokenizer.ggml.tokens").unwrap().unwrap();
        assert_eq!(tokens.len(), vocab as usize);
        for token in reserved_tokens("phi3") {
            assert_eq!(tokens.iter().filter(|t| **t == *token).count(), 1, "{token}");
        }
    }

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
    fn pure_weights_parse_and_fall_back_where_rows_do_not_fit() {
        assert_eq!(SynthWeights::parse("q4_k_m").unwrap(), SynthWeights::Q4KM);
        assert_eq!(SynthWeights::parse("iq4_xs").unwrap(), SynthWeights::Pure(GgmlType::IQ4_XS));
        assert!(matches!(SynthWeights::parse("Q1_0"), Err(SynthError::UnknownWeights { .. })));
        assert_eq!(pure_type(GgmlType::Q2_K, 2048), GgmlType::Q2_K);
        assert_eq!(pure_type(GgmlType::Q2_K, 640), GgmlType::Q8_0);
        assert_eq!(pure_type(GgmlType::MXFP4, 48), GgmlType::F16);
    }

    #[test]
    fn unknown_shapes_are_refused() {
        assert!(matches!(SynthShape::named("gemma3", "7b"), Err(SynthError::UnknownShape { .. })));
        assert!(SynthShape::named("llama", "qwen2.5-1.5b").is_ok());
        for (arch, size) in SHAPES {
            assert!(SynthShape::named(arch, size).is_ok(), "{arch} {size}");
        }
    }
}
