//! Conversion to RDRR (the engine's manifest-plus-shards format), streamed tensor by tensor:
//! from a GGUF file (same types, same bytes) or from a Hugging Face safetensors folder or Hub
//! repository (quantized to a Q4_K_M mix, Q6_K, Q8_0 or F16), installed into the model store
//! as one model.

mod error;
mod gguf;
mod hf_config;
mod hf_tokenizer;
mod hub_source;
mod quant_mix;
mod safetensors;

use std::path::{Path, PathBuf};

use doppler_engine::{
    rdrr::{WrittenRdrr, MAX_SHARD_BYTES},
    store::{check_model_name, model_name_from_file, InstallLock, InstalledModel, ModelStore, StoreError},
};

use crate::{
    download::{CancelToken, RetryPolicy},
    hub::HubClient,
    PullEvent,
};

pub use error::ConvertError;
pub use gguf::gguf_to_rdrr;
pub use hub_source::{is_convertible, HubSource};
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

/// Where a model to convert is: a `.gguf` file or a model folder here, or a Hub repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConvertSource {
    Local(PathBuf),
    Hub(HubSource),
}

impl ConvertSource {
    /// An existing path or a `.gguf` name is local; else text shaped `owner/name[@revision]`
    /// names a Hub repository; anything else stays a path (whose absence the error names).
    pub fn parse(text: &str) -> ConvertSource {
        let path = Path::new(text);
        if path.exists() || text.ends_with(".gguf") {
            return ConvertSource::Local(path.to_path_buf());
        }
        HubSource::parse(text).map_or_else(|| ConvertSource::Local(path.to_path_buf()), ConvertSource::Hub)
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

/// What converting a Hub repository is doing: downloading its files, then converting them.
#[derive(Debug, Clone, PartialEq)]
pub enum ConvertEvent {
    Download(PullEvent),
    Convert(ConvertProgress),
}

/// Converts `request.source` to RDRR and installs it into `store`; the store only ever sees
/// the finished, checked model (written beside its downloads, then moved in).
pub fn convert_into_store(
    store: &ModelStore,
    request: &ConvertRequest,
    progress: &mut dyn FnMut(ConvertProgress),
) -> Result<InstalledModel, ConvertError> {
    let source = &request.source;
    let name = free_name(store, request.name.clone().or_else(|| default_name(source)), source)?;
    let origin =
        format!("convert:{}", std::path::absolute(source).unwrap_or_else(|_| source.clone()).display());
    if source.is_dir() {
        let quant = request.quant.unwrap_or(TargetQuant::Q8_0);
        write_and_install(store, &name, origin, |out| {
            safetensors_to_rdrr(source, out, quant, MAX_SHARD_BYTES, progress)
        })
    } else if let Some(quant) = request.quant {
        Err(ConvertError::QuantForGguf { quant })
    } else {
        write_and_install(store, &name, origin, |out| gguf_to_rdrr(source, out, MAX_SHARD_BYTES, progress))
    }
}

/// Downloads the safetensors model of `source` (resuming what an earlier run left), converts
/// it to `quant` (default Q8_0) and installs it as `name` (default: the repository's name with
/// `-rdrr`). The downloads are removed once the model is installed. Once `cancel` is cancelled
/// it stops (downloads at their next chunk, conversion at its next tensor) with nothing
/// installed and the downloads kept, so the next run resumes them.
#[allow(clippy::too_many_arguments)]
pub fn convert_repo_into_store(
    client: &HubClient,
    store: &ModelStore,
    source: &HubSource,
    quant: Option<TargetQuant>,
    name: Option<String>,
    policy: &RetryPolicy,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(ConvertEvent),
) -> Result<InstalledModel, ConvertError> {
    let name = free_name(store, name.or_else(|| name_with_format(source.name())), Path::new(&source.repo))?;
    let folder = hub_source::download_source(client, store, source, policy, cancel, &mut |event| {
        on_event(ConvertEvent::Download(event))
    })?;
    let quant = quant.unwrap_or(TargetQuant::Q8_0);
    let origin = format!("convert:hf:{}@{}", source.repo, source.revision);
    let installed = write_and_install(store, &name, origin, |out| {
        safetensors::safetensors_to_rdrr_until_cancelled(
            &folder,
            out,
            quant,
            MAX_SHARD_BYTES,
            cancel,
            &mut |progress| on_event(ConvertEvent::Convert(progress)),
        )
    })?;
    source.remove_cache(store);
    Ok(installed)
}

/// `name` when it is valid and not installed yet (checked before any work is done).
fn free_name(store: &ModelStore, name: Option<String>, source: &Path) -> Result<String, ConvertError> {
    let name = name.ok_or_else(|| ConvertError::NoName { path: source.to_path_buf() })?;
    check_model_name(&name)?;
    if store.get(&name)?.is_some() {
        let path = store.root().join("models").join(&name);
        return Err(StoreError::AlreadyInstalled { name, path }.into());
    }
    Ok(name)
}

/// Runs `write` into a scratch folder beside the store's downloads and installs what it wrote.
fn write_and_install(
    store: &ModelStore,
    name: &str,
    origin: String,
    write: impl FnOnce(&Path) -> Result<WrittenRdrr, ConvertError>,
) -> Result<InstalledModel, ConvertError> {
    let work = WorkDir::new(&store.downloads_dir(), name)?;
    let written = write(work.path())?;
    Ok(store.install_verified(name, &written.verified_files(), origin)?)
}

/// `gemma-3-270m-q4_k_m.gguf` → `gemma-3-270m-q4_k_m-rdrr`; a folder `Qwen3-0.6B` →
/// `qwen3-0.6b-rdrr`.
fn default_name(source: &Path) -> Option<String> {
    let base = if source.is_dir() { source.file_name()? } else { source.file_stem()? };
    name_with_format(&base.to_string_lossy())
}

/// `Qwen3-0.6B` → `qwen3-0.6b-rdrr`.
fn name_with_format(base: &str) -> Option<String> {
    // The suffix keeps the name apart from the same model imported as GGUF; it goes on
    // before the length cap so that the name stays valid.
    let name = model_name_from_file(&format!("{base}.x"))?;
    let name: String = name.chars().take(64 - "-rdrr".len()).collect();
    Some(format!("{}-rdrr", name.trim_end_matches(['.', '_', '-'])))
}

/// A conversion's scratch folder, `downloads/convert-{name}`, removed when dropped: after a
/// successful install its files have moved into the store; after a failure nothing
/// half-written stays behind. Its lock (held while it exists, released by the OS if the
/// process dies) tells a live conversion's folder from one a killed process left, which the
/// next conversion removes.
struct WorkDir {
    path: PathBuf,
    _lock: InstallLock,
}

const SCRATCH_PREFIX: &str = "convert-";

impl WorkDir {
    fn new(downloads: &Path, name: &str) -> Result<WorkDir, ConvertError> {
        remove_abandoned_scratch(downloads)?;
        let path = downloads.join(format!("{SCRATCH_PREFIX}{name}"));
        let lock_path = scratch_lock(&path);
        let lock = InstallLock::try_acquire(&lock_path)?
            .ok_or_else(|| StoreError::InstallInProgress { name: name.to_string(), lock: lock_path })?;
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(ConvertError::io(&path))?;
        }
        std::fs::create_dir_all(&path).map_err(ConvertError::io(&path))?;
        Ok(WorkDir { path, _lock: lock })
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), %error, "could not remove a conversion's scratch folder");
        }
    }
}

/// `convert-{name}.lock` beside the folder (names may hold dots: no `with_extension`).
fn scratch_lock(scratch: &Path) -> PathBuf {
    let mut lock = scratch.as_os_str().to_owned();
    lock.push(".lock");
    PathBuf::from(lock)
}

/// Removes the scratch folders of conversions whose process died (their lock is free).
fn remove_abandoned_scratch(downloads: &Path) -> Result<(), ConvertError> {
    let entries = match std::fs::read_dir(downloads) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(ConvertError::io(downloads)(error)),
    };
    for entry in entries {
        let path = entry.map_err(ConvertError::io(downloads))?.path();
        let is_scratch = path.is_dir()
            && path.file_name().is_some_and(|name| name.to_string_lossy().starts_with(SCRATCH_PREFIX));
        if !is_scratch {
            continue;
        }
        if let Some(_lock) = InstallLock::try_acquire(&scratch_lock(&path))? {
            tracing::info!(dir = %path.display(), "removing the scratch folder of a conversion that was killed");
            std::fs::remove_dir_all(&path).map_err(ConvertError::io(&path))?;
        }
    }
    Ok(())
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

    #[test]
    fn a_killed_conversions_scratch_goes_and_a_live_ones_stays() {
        let downloads = tempfile::tempdir().unwrap();
        // A killed process's folder (its lock file may or may not exist: both are free) and
        // one from before scratch folders had locks.
        for abandoned in ["convert-qwen3-0.6b-rdrr", "convert-old-rdrr-4242"] {
            std::fs::create_dir(downloads.path().join(abandoned)).unwrap();
            std::fs::write(downloads.path().join(abandoned).join("shard-0.bin"), b"half").unwrap();
        }
        std::fs::write(downloads.path().join("convert-qwen3-0.6b-rdrr.lock"), b"").unwrap();
        // Another download's partial file is not a conversion's.
        std::fs::write(downloads.path().join("model.gguf.part"), b"partial").unwrap();

        let live = WorkDir::new(downloads.path(), "live-rdrr").unwrap();
        std::fs::write(live.path().join("shard-0.bin"), b"being written").unwrap();
        assert!(!downloads.path().join("convert-qwen3-0.6b-rdrr").exists());
        assert!(!downloads.path().join("convert-old-rdrr-4242").exists());
        assert!(downloads.path().join("model.gguf.part").exists());

        // A second conversion sweeps too, and leaves the live one alone.
        let second = WorkDir::new(downloads.path(), "second-rdrr").unwrap();
        assert!(live.path().join("shard-0.bin").exists(), "a live conversion's folder stays");
        assert!(
            matches!(
                WorkDir::new(downloads.path(), "live-rdrr"),
                Err(ConvertError::Store(StoreError::InstallInProgress { .. }))
            ),
            "one name converts once at a time"
        );
        let (live_path, second_path) = (live.path().to_path_buf(), second.path().to_path_buf());
        drop((live, second));
        assert!(!live_path.exists() && !second_path.exists());
    }
}
