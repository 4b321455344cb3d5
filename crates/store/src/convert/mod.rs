//! Conversion to RDRR (the engine's manifest-plus-shards format), streamed tensor by tensor:
//! from a GGUF file (same types, same bytes) or from a Hugging Face safetensors folder
//! (quantized to a Q4_K_M mix, Q6_K, Q8_0 or F16), installed into the model store as one model.

mod error;
mod gguf;
mod hf_config;
mod hf_tokenizer;
mod quant_mix;
mod safetensors;

use std::path::{Path, PathBuf};

use doppler_engine::{
    rdrr::{WrittenRdrr, MAX_SHARD_BYTES},
    store::{check_model_name, model_name_from_file, InstalledModel, ModelStore, VerifiedFile},
};

pub use error::ConvertError;
pub use gguf::gguf_to_rdrr;
pub use safetensors::safetensors_to_rdrr;

/// How far a conversion is: bytes of tensor data written of the model's total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertProgress {
    pub tensor: String,
    pub done_bytes: u64,
    pub total_bytes: u64,
}

/// The weight types a safetensors model's matrices are quantized to (norms and other vectors
/// stay F32). A GGUF keeps its own types.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetQuant {
    /// llama.cpp's Q4_K_M mix: Q4_K, with Q6_K where it matters most.
    Q4_K_M,
    Q6_K,
    Q8_0,
    F16,
}

impl std::str::FromStr for TargetQuant {
    type Err = ConvertError;

    fn from_str(text: &str) -> Result<TargetQuant, ConvertError> {
        match text.to_ascii_uppercase().as_str() {
            // llama-quantize takes Q4_K for Q4_K_M too.
            "Q4_K_M" | "Q4_K" => Ok(TargetQuant::Q4_K_M),
            "Q6_K" => Ok(TargetQuant::Q6_K),
            "Q8_0" => Ok(TargetQuant::Q8_0),
            "F16" => Ok(TargetQuant::F16),
            _ => Err(ConvertError::UnknownQuant { quant: text.to_string() }),
        }
    }
}

/// What to convert and how to name the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertRequest {
    /// A `.gguf` file or a Hugging Face model folder.
    pub source: PathBuf,
    /// For a safetensors folder: the matrices' type (default Q8_0). A GGUF cannot take one.
    pub quant: Option<TargetQuant>,
    /// The installed name (default: made from the source's name).
    pub name: Option<String>,
}

/// Converts `request.source` to RDRR and installs it into `store`; the store only ever sees
/// the finished, checked model (written beside its downloads, then moved in).
pub fn convert_into_store(
    store: &ModelStore,
    request: &ConvertRequest,
    progress: &mut dyn FnMut(ConvertProgress),
) -> Result<InstalledModel, ConvertError> {
    let source = &request.source;
    let name = match &request.name {
        Some(name) => name.clone(),
        None => default_name(source).ok_or_else(|| ConvertError::NoName { path: source.clone() })?,
    };
    check_model_name(&name)?;
    if store.get(&name)?.is_some() {
        return Err(doppler_engine::store::StoreError::AlreadyInstalled {
            name: name.clone(),
            path: store.root().join("models").join(&name),
        }
        .into());
    }
    let work = WorkDir::new(store.downloads_dir().join(format!("convert-{name}-{}", std::process::id())))?;
    let written = if source.is_dir() {
        let quant = request.quant.unwrap_or(TargetQuant::Q8_0);
        safetensors_to_rdrr(source, work.path(), quant, MAX_SHARD_BYTES, progress)?
    } else if let Some(quant) = request.quant {
        return Err(ConvertError::QuantForGguf { quant });
    } else {
        gguf_to_rdrr(source, work.path(), MAX_SHARD_BYTES, progress)?
    };
    let origin =
        format!("convert:{}", std::path::absolute(source).unwrap_or_else(|_| source.clone()).display());
    Ok(store.install_verified(&name, &verified_files(&written), origin)?)
}

fn verified_files(written: &WrittenRdrr) -> Vec<VerifiedFile> {
    written
        .files
        .iter()
        .map(|file| VerifiedFile {
            path: file.path.clone(),
            file_name: file.file_name.clone(),
            sha256: file.sha256.clone(),
            size: file.size,
        })
        .collect()
}

/// `gemma-3-270m-q4_k_m.gguf` → `gemma-3-270m-q4_k_m-rdrr`; a folder `Qwen3-0.6B` →
/// `qwen3-0.6b-rdrr`.
fn default_name(source: &Path) -> Option<String> {
    let base = if source.is_dir() {
        source.file_name()?.to_string_lossy().into_owned()
    } else {
        source.file_stem()?.to_string_lossy().into_owned()
    };
    // The suffix keeps the name apart from the same model imported as GGUF; it goes on
    // before the length cap so that the name stays valid.
    let name = model_name_from_file(&format!("{base}.x"))?;
    let name: String = name.chars().take(64 - "-rdrr".len()).collect();
    Some(format!("{}-rdrr", name.trim_end_matches(['.', '_', '-'])))
}

/// A scratch folder removed when dropped: after a successful install its files have moved
/// into the store; after a failure nothing half-written stays behind.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new(path: PathBuf) -> Result<WorkDir, ConvertError> {
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(ConvertError::io(&path))?;
        }
        std::fs::create_dir_all(&path).map_err(ConvertError::io(&path))?;
        Ok(WorkDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!(dir = %self.0.display(), %error, "could not remove a conversion's scratch folder");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_keep_dots_and_mark_the_format() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("Qwen3-0.6B");
        std::fs::create_dir(&folder).unwrap();
        assert_eq!(default_name(&folder).as_deref(), Some("qwen3-0.6b-rdrr"));
        assert_eq!(
            default_name(Path::new("/m/gemma-3-270m-q4_k_m.gguf")).as_deref(),
            Some("gemma-3-270m-q4_k_m-rdrr")
        );
        let long = default_name(Path::new(&format!("{}.gguf", "x".repeat(100)))).unwrap();
        assert!(long.len() <= 64 && long.ends_with("-rdrr"), "{long}");
    }
}
