//! API keys in the operating system's keychain (macOS Keychain, Windows Credential Manager,
//! the Secret Service on Linux) through `keyring`. Keys never go to the webview, nor into the
//! database. Where no keychain answers (a Linux session without a Secret Service, as on CI),
//! storing a key fails with a message the UI shows; nothing falls back to a plain-text file.

use std::sync::Arc;

/// Where the keychain files DOPPLER's keys: one service, one account per key.
const SERVICE: &str = "dev.doppler.app";

#[derive(Debug, Clone, thiserror::Error)]
pub enum KeyStoreError {
    #[error("the system keychain is not available, so the API key cannot be stored safely ({0}); on Linux, a Secret Service such as GNOME Keyring or KWallet must be running")]
    Unavailable(String),
    #[error("the system keychain refused the API key: {0}")]
    Refused(String),
}

/// The keys of remote backends and of the app's own server. Calls block (the keychain may
/// ask the user): callers run them off the async runtime.
pub trait KeyStore: Send + Sync + 'static {
    fn get(&self, account: &str) -> Result<Option<String>, KeyStoreError>;
    fn set(&self, account: &str, secret: &str) -> Result<(), KeyStoreError>;
    /// Removing a key that is not there is not an error.
    fn delete(&self, account: &str) -> Result<(), KeyStoreError>;
}

pub type SharedKeyStore = Arc<dyn KeyStore>;

/// The OS keychain.
pub struct OsKeychain;

impl OsKeychain {
    fn entry(account: &str) -> Result<keyring::Entry, KeyStoreError> {
        keyring::Entry::new(SERVICE, account).map_err(keychain_error)
    }
}

impl KeyStore for OsKeychain {
    fn get(&self, account: &str) -> Result<Option<String>, KeyStoreError> {
        match Self::entry(account)?.get_password() {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(error) => Err(keychain_error(error)),
        }
    }

    fn set(&self, account: &str, secret: &str) -> Result<(), KeyStoreError> {
        Self::entry(account)?.set_password(secret).map_err(keychain_error)
    }

    fn delete(&self, account: &str) -> Result<(), KeyStoreError> {
        match Self::entry(account)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(error) => Err(keychain_error(error)),
        }
    }
}

fn keychain_error(error: keyring::Error) -> KeyStoreError {
    match error {
        keyring::Error::PlatformFailure(_) | keyring::Error::NoStorageAccess(_) => {
            KeyStoreError::Unavailable(error.to_string())
        }
        other => KeyStoreError::Refused(other.to_string()),
    }
}

/// Runs a keychain call on a thread where blocking is allowed (the Secret Service client
/// runs a runtime of its own, which must not start inside the app's).
pub async fn off_runtime<T: Send + 'static>(
    keys: &SharedKeyStore,
    call: impl FnOnce(&dyn KeyStore) -> Result<T, KeyStoreError> + Send + 'static,
) -> Result<T, KeyStoreError> {
    let keys = keys.clone();
    tokio::task::spawn_blocking(move || call(&*keys))
        .await
        .unwrap_or_else(|error| Err(KeyStoreError::Refused(format!("the keychain call failed: {error}"))))
}

/// A keychain for tests: CI machines have no Secret Service.
#[cfg(test)]
#[derive(Default)]
pub struct MemoryKeyStore(std::sync::Mutex<std::collections::HashMap<String, String>>);

#[cfg(test)]
impl KeyStore for MemoryKeyStore {
    fn get(&self, account: &str) -> Result<Option<String>, KeyStoreError> {
        Ok(self.0.lock().unwrap().get(account).cloned())
    }

    fn set(&self, account: &str, secret: &str) -> Result<(), KeyStoreError> {
        self.0.lock().unwrap().insert(account.to_string(), secret.to_string());
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<(), KeyStoreError> {
        self.0.lock().unwrap().remove(account);
        Ok(())
    }
}
