//! A Hugging Face Hub repository as a conversion's source: the files a safetensors model
//! needs, downloaded with the resumable, sha256-checked download engine into a cache folder
//! of the store, so that a conversion cut short resumes its downloads on the next run.

use std::path::{Path, PathBuf};

use doppler_engine::store::{ensure_free_space, ModelStore};
use serde_json::Value;

use super::ConvertError;
use crate::{
    download::{state_path, CancelToken, RemoteFile, RetryPolicy},
    hub::{check_revision, repo_segments, HubClient, RepoFile},
    pull::{bytes_to_fetch, download_all},
    PullEvent,
};

/// The files besides the weights that a conversion reads (the first two it needs).
const MODEL_FILES: [&str; 4] =
    ["config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"];
const WEIGHT_INDEX: &str = "model.safetensors.index.json";

/// A Hub repository at a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSource {
    /// `owner/name`.
    pub repo: String,
    pub revision: String,
}

impl HubSource {
    /// `owner/name` or `owner/name@revision` (default `main`), when `text` has that shape.
    pub fn parse(text: &str) -> Option<HubSource> {
        let (repo, revision) = text.split_once('@').unwrap_or((text, "main"));
        let owner_and_name = repo_segments(repo).is_ok_and(|parts| parts.len() == 2);
        (owner_and_name && check_revision(revision).is_ok())
            .then(|| HubSource { repo: repo.to_string(), revision: revision.to_string() })
    }

    /// The repository's name without its owner (`Qwen3-0.6B`).
    pub fn name(&self) -> &str {
        self.repo.rsplit('/').next().unwrap_or(&self.repo)
    }

    /// Where its downloads live: part files in this folder, finished files in its
    /// `name()` subfolder (named like the repository, as a local model folder would be).
    fn cache_dir(&self, store: &ModelStore) -> PathBuf {
        let safe = |text: &str| text.replace(['/', '\\'], "--");
        store.downloads_dir().join("hub-sources").join(format!(
            "{}@{}",
            safe(&self.repo),
            safe(&self.revision)
        ))
    }

    /// Removes the downloaded source once the model it became is installed.
    pub(crate) fn remove_cache(&self, store: &ModelStore) {
        let dir = self.cache_dir(store);
        if let Err(error) = std::fs::remove_dir_all(&dir) {
            tracing::warn!(dir = %dir.display(), %error, "could not remove a converted repository's downloads");
        }
    }
}

/// Whether a repository with `files` holds a safetensors model to convert: a `config.json`, a
/// `tokenizer.json` and `.safetensors` weights at its top level.
pub fn is_convertible(files: &[RepoFile]) -> bool {
    let has = |wanted: &dyn Fn(&str) -> bool| files.iter().any(|file| wanted(&file.path));
    has(&|path| path == MODEL_FILES[0])
        && has(&|path| path == MODEL_FILES[1])
        && has(&|path| !path.contains('/') && path.ends_with(".safetensors"))
}

/// Downloads what converting `source` needs into its cache folder (files already finished
/// there are kept; partial ones resume) and returns the folder holding the finished files.
pub(crate) fn download_source(
    client: &HubClient,
    store: &ModelStore,
    source: &HubSource,
    policy: &RetryPolicy,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(PullEvent),
) -> Result<PathBuf, ConvertError> {
    let listed = client.list_files(&source.repo, &source.revision)?;
    let top_level: Vec<&RepoFile> = listed.iter().filter(|file| !file.path.contains('/')).collect();
    let cache = source.cache_dir(store);
    let folder = cache.join(source.name());
    let by_name = |name: &str| top_level.iter().copied().find(|file| file.path == name);
    let mut wanted: Vec<&RepoFile> = MODEL_FILES.iter().filter_map(|name| by_name(name)).collect();
    // A sharded model names its shards in the index: only those are fetched (some
    // repositories also carry the same weights in another layout, `consolidated.safetensors`).
    let weights: Vec<&RepoFile> = match by_name(WEIGHT_INDEX) {
        Some(index) => {
            std::fs::create_dir_all(&folder).map_err(ConvertError::io(&folder))?;
            fetch(client, source, &cache, &folder, &[index], policy, cancel, on_event)?;
            let shards = index_shards(&folder.join(WEIGHT_INDEX))?;
            wanted.push(index);
            shards
                .iter()
                .map(|shard| {
                    by_name(shard).ok_or_else(|| ConvertError::MissingShard {
                        repo: source.repo.clone(),
                        file: shard.clone(),
                    })
                })
                .collect::<Result<_, _>>()?
        }
        None => top_level.iter().copied().filter(|file| file.path.ends_with(".safetensors")).collect(),
    };
    if weights.is_empty() {
        let gguf = listed.iter().any(|file| file.path.ends_with(".gguf"));
        return Err(ConvertError::NoSafetensorsInRepo { repo: source.repo.clone(), gguf });
    }
    for required in &MODEL_FILES[..2] {
        if by_name(required).is_none() {
            return Err(ConvertError::MissingRepoFile {
                repo: source.repo.clone(),
                file: required.to_string(),
            });
        }
    }
    wanted.extend(weights);
    std::fs::create_dir_all(&folder).map_err(ConvertError::io(&folder))?;
    fetch(client, source, &cache, &folder, &wanted, policy, cancel, on_event)?;
    Ok(folder)
}

/// Fetches the `files` not yet finished in `folder`, their parts kept in `cache`, and moves
/// each into `folder` once whole and checked.
#[allow(clippy::too_many_arguments)]
fn fetch(
    client: &HubClient,
    source: &HubSource,
    cache: &Path,
    folder: &Path,
    files: &[&RepoFile],
    policy: &RetryPolicy,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(PullEvent),
) -> Result<(), ConvertError> {
    // A file is moved into the folder only after its size and sha256 were checked, so one
    // there with the listed size is whole.
    let finished =
        |file: &RepoFile| std::fs::metadata(folder.join(&file.path)).is_ok_and(|m| m.len() == file.size);
    let remotes: Vec<RemoteFile> = files
        .iter()
        .filter(|file| !finished(file))
        .map(|file| RemoteFile {
            repo: source.repo.clone(),
            revision: source.revision.clone(),
            file: (*file).clone(),
        })
        .collect();
    if remotes.is_empty() {
        return Ok(());
    }
    ensure_free_space(cache, bytes_to_fetch(cache, &remotes))?;
    on_event(PullEvent::Chosen {
        name: source.repo.clone(),
        files: remotes.iter().map(|remote| remote.file.path.clone()).collect(),
        total: remotes.iter().map(|remote| remote.file.size).sum(),
    });
    for verified in download_all(client, &remotes, cache, policy, cancel, on_event)? {
        let target = folder.join(&verified.file_name);
        std::fs::rename(&verified.path, &target).map_err(ConvertError::io(&target))?;
        let _ = std::fs::remove_file(state_path(&verified.path));
    }
    Ok(())
}

/// The shard file names of a `model.safetensors.index.json` (its `weight_map`'s values).
fn index_shards(path: &Path) -> Result<Vec<String>, ConvertError> {
    let text = std::fs::read(path).map_err(ConvertError::io(path))?;
    let bad = |reason: String| ConvertError::Json { path: path.to_path_buf(), reason };
    let index: Value = serde_json::from_slice(&text).map_err(|error| bad(error.to_string()))?;
    let map = index["weight_map"].as_object().ok_or_else(|| bad("no weight_map".into()))?;
    let mut shards = Vec::new();
    for shard in map.values() {
        let shard =
            shard.as_str().ok_or_else(|| bad(format!("a weight_map value {shard} is not a file name")))?;
        if !shards.iter().any(|known| known == shard) {
            shards.push(shard.to_string());
        }
    }
    shards.sort();
    Ok(shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_with_an_optional_revision_parse() {
        let source = HubSource::parse("Qwen/Qwen3-0.6B").unwrap();
        assert_eq!(
            (source.repo.as_str(), source.revision.as_str(), source.name()),
            ("Qwen/Qwen3-0.6B", "main", "Qwen3-0.6B")
        );
        assert_eq!(HubSource::parse("org/model@refs/pr/1").unwrap().revision, "refs/pr/1");
        for not_a_repo in ["model.gguf", "./org/model", "/abs/path", "a/b/c", "org/", "org/model@", "a b/c"] {
            assert_eq!(HubSource::parse(not_a_repo), None, "{not_a_repo}");
        }
    }
}
