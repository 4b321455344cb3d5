use std::{
    fs::{self, File},
    path::{Path, PathBuf},
};

use crate::rdrr::{is_rdrr_path, MANIFEST_FILE as RDRR_MANIFEST};

use super::{
    checksum::{hash_file, parse_sha256},
    disk_space::ensure_free_space,
    location::default_root,
    lock::InstallLock,
    manifest::ManifestFile,
    manifest::ModelManifest,
    names::{check_model_name, is_plain_file_name},
    staging::{Expected, Staging},
    verified_file::VerifiedFile,
    StoreError,
};

/// The models installed on this machine: `<root>/models/<name>/` holds a model file and its
/// `model.json` manifest; `<root>/tmp/` holds installs in progress, `<root>/locks/` their locks.
#[derive(Debug, Clone)]
pub struct ModelStore {
    root: PathBuf,
}

/// An installed model and where its file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledModel {
    pub manifest: ModelManifest,
    /// `<root>/models/<name>/`.
    pub dir: PathBuf,
    /// The model file inside `dir`.
    pub path: PathBuf,
}

impl InstalledModel {
    pub(crate) fn new(manifest: ModelManifest, dir: PathBuf) -> InstalledModel {
        let path = dir.join(&manifest.file_name);
        InstalledModel { manifest, dir, path }
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }
}

impl ModelStore {
    /// Opens (creating it if needed) the store at `root` and removes what interrupted
    /// installs left behind.
    pub fn open(root: impl Into<PathBuf>) -> Result<ModelStore, StoreError> {
        let store = ModelStore { root: root.into() };
        for dir in [store.models_dir(), store.tmp_dir(), store.locks_dir(), store.downloads_dir()] {
            fs::create_dir_all(&dir).map_err(StoreError::io("creating", &dir))?;
        }
        store.remove_abandoned_staging();
        Ok(store)
    }

    /// The store at `DOPPLER_HOME`, else in the platform's data directory.
    pub fn default_location() -> Result<ModelStore, StoreError> {
        ModelStore::open(default_root()?)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Installed models by name. A directory with a missing or unreadable manifest or model
    /// file is skipped with a warning.
    pub fn list(&self) -> Result<Vec<InstalledModel>, StoreError> {
        let models_dir = self.models_dir();
        let entries = fs::read_dir(&models_dir).map_err(StoreError::io("reading", &models_dir))?;
        let mut models = Vec::new();
        for entry in entries {
            let entry = entry.map_err(StoreError::io("reading", &models_dir))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
            if check_model_name(&name).is_err() || !entry.path().is_dir() {
                continue;
            }
            match self.get(&name) {
                Ok(Some(model)) if model.path.is_file() => models.push(model),
                Ok(Some(model)) => {
                    tracing::warn!(model = %name, file = %model.path.display(), "skipping an installed model whose file is missing")
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(model = %name, %error, "skipping an unreadable installed model"),
            }
        }
        models.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
        Ok(models)
    }

    /// The installed model named `name`, if any.
    pub fn get(&self, name: &str) -> Result<Option<InstalledModel>, StoreError> {
        check_model_name(name)?;
        let dir = self.model_dir(name);
        if !dir.is_dir() {
            return Ok(None);
        }
        Ok(Some(InstalledModel::new(ModelManifest::read(&dir)?, dir)))
    }

    /// A model file to load: an existing file path (or an RDRR model's folder) wins, then an
    /// installed model's name.
    pub fn resolve(&self, name_or_path: &str) -> Result<PathBuf, StoreError> {
        let as_path = Path::new(name_or_path);
        if as_path.is_file() {
            return Ok(as_path.to_path_buf());
        }
        if as_path.is_dir() && is_rdrr_path(as_path) {
            return Ok(as_path.join(RDRR_MANIFEST));
        }
        if check_model_name(name_or_path).is_ok() {
            if let Some(model) = self.get(name_or_path)? {
                return Ok(model.path);
            }
        }
        Err(StoreError::UnknownModel { name: name_or_path.to_string(), installed: self.installed_names()? })
    }

    /// Copies the model file `src` into the store as `name`, checking it against
    /// `expected_sha256` when given and that it is a GGUF file.
    pub fn install_file(
        &self,
        name: &str,
        src: &Path,
        expected_sha256: Option<&str>,
    ) -> Result<InstalledModel, StoreError> {
        check_model_name(name)?;
        let expected_sha256 = expected_sha256.map(parse_sha256).transpose()?;
        let metadata = fs::metadata(src).map_err(StoreError::io("reading", src))?;
        if !metadata.is_file() {
            return Err(StoreError::SourceNotAFile { path: src.to_path_buf() });
        }
        let file_name = match src.file_name().and_then(|file_name| file_name.to_str()) {
            Some(file_name) if is_plain_file_name(file_name) => file_name.to_string(),
            _ => format!("{name}.gguf"),
        };
        let lock = self.lock(name)?;
        let model_dir = self.model_dir(name);
        if model_dir.exists() {
            return Err(StoreError::AlreadyInstalled { name: name.to_string(), path: model_dir });
        }
        let staging = Staging::begin(self, name, &lock)?;
        ensure_free_space(staging.dir(), metadata.len())?;
        let mut writer = staging.create_model_file(&file_name)?;
        let mut reader = File::open(src).map_err(StoreError::io("reading", src))?;
        writer.copy_from(&mut reader, &mut |_| {}).map_err(StoreError::io("copying", src))?;
        let what = src.display().to_string();
        let expected =
            Expected { what: &what, sha256: expected_sha256.as_deref(), size: Some(metadata.len()) };
        let source =
            format!("file:{}", std::path::absolute(src).unwrap_or_else(|_| src.to_path_buf()).display());
        staging.commit(writer, &expected, source)
    }

    /// Moves downloaded files into the store as `name`: the first is the model file, the rest
    /// the other parts of a split GGUF, in order. Each must lie on the store's filesystem
    /// (under `downloads_dir`) and has been checked against its publisher's sha256 by the
    /// caller, which computed `sha256` while writing it.
    pub fn install_verified(
        &self,
        name: &str,
        files: &[VerifiedFile],
        source: String,
    ) -> Result<InstalledModel, StoreError> {
        check_model_name(name)?;
        let entries: Vec<ManifestFile> = files.iter().map(VerifiedFile::manifest_entry).collect();
        let Some((first, split_parts)) = entries.split_first() else {
            return Err(StoreError::NoModelFile { name: name.to_string() });
        };
        for file in files {
            if !is_plain_file_name(&file.file_name) {
                return Err(StoreError::InvalidName {
                    name: file.file_name.clone(),
                    reason: "a model file name is one plain path component",
                });
            }
            parse_sha256(&file.sha256)?;
            let size = fs::metadata(&file.path).map_err(StoreError::io("reading", &file.path))?.len();
            if size != file.size {
                return Err(StoreError::SizeMismatch {
                    what: file.path.display().to_string(),
                    expected: file.size,
                    actual: size,
                });
            }
        }
        let lock = self.lock(name)?;
        let model_dir = self.model_dir(name);
        if model_dir.exists() {
            return Err(StoreError::AlreadyInstalled { name: name.to_string(), path: model_dir });
        }
        let staging = Staging::begin(self, name, &lock)?;
        for file in files {
            staging.adopt_model_file(&file.path, &file.file_name)?;
        }
        let what = format!("{name} from {source}");
        staging.commit_checked(first.clone(), split_parts.to_vec(), &what, source)
    }

    /// Where downloads in progress keep their partial files: on the store's filesystem, so a
    /// finished one moves into the store with a rename.
    pub fn downloads_dir(&self) -> PathBuf {
        self.root.join("downloads")
    }

    /// Uninstalls `name`: its directory leaves the store in one rename, then is deleted.
    pub fn remove(&self, name: &str) -> Result<(), StoreError> {
        check_model_name(name)?;
        let lock = self.lock(name)?;
        let model_dir = self.model_dir(name);
        if !model_dir.exists() {
            return Err(StoreError::NotInstalled {
                name: name.to_string(),
                installed: self.installed_names()?,
            });
        }
        Staging::begin(self, name, &lock)?.take_out(&model_dir)
    }

    /// Checks an installed model's files against its manifest's sizes and sha256s.
    pub fn verify(&self, model: &InstalledModel) -> Result<(), StoreError> {
        for file in model.manifest.files() {
            let path = model.dir.join(&file.file_name);
            let what = path.display().to_string();
            let size = fs::metadata(&path).map_err(StoreError::io("reading", &path))?.len();
            if size != file.size {
                return Err(StoreError::SizeMismatch { what, expected: file.size, actual: size });
            }
            let sha256 = hash_file(&path).map_err(StoreError::io("reading", &path))?;
            if sha256 != file.sha256 {
                return Err(StoreError::ChecksumMismatch { what, expected: file.sha256, actual: sha256 });
            }
        }
        Ok(())
    }

    /// `name`'s install lock, failing at once when another process holds it.
    pub(crate) fn lock(&self, name: &str) -> Result<InstallLock, StoreError> {
        let lock_path = self.lock_path(name);
        InstallLock::try_acquire(&lock_path)?
            .ok_or_else(|| StoreError::InstallInProgress { name: name.to_string(), lock: lock_path })
    }

    pub(crate) fn lock_path(&self, name: &str) -> PathBuf {
        self.locks_dir().join(format!("{name}.lock"))
    }

    pub(crate) fn model_dir(&self, name: &str) -> PathBuf {
        self.models_dir().join(name)
    }

    pub(crate) fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// Where installs of `name` stage their files.
    pub(crate) fn staging_area(&self, name: &str) -> PathBuf {
        self.tmp_dir().join(name)
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    fn installed_names(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.list()?.into_iter().map(|model| model.manifest.name).collect())
    }

    /// Deletes the staging areas of names nobody holds the lock of: their installs died.
    /// Best effort: what cannot be removed now is tried again next time.
    fn remove_abandoned_staging(&self) {
        let Ok(entries) = fs::read_dir(self.tmp_dir()) else { return };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
            if check_model_name(&name).is_err() {
                continue;
            }
            match InstallLock::try_acquire(&self.lock_path(&name)) {
                Ok(Some(_lock)) => {
                    if let Err(error) = fs::remove_dir_all(entry.path()) {
                        tracing::warn!(dir = %entry.path().display(), %error, "could not remove an abandoned install");
                    }
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "could not check for abandoned installs"),
            }
        }
    }
}
