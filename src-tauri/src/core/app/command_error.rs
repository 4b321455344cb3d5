use serde::{Serialize, Serializer};

/// What a failed command hands the UI: the error's message, shown as is.
#[derive(Debug)]
pub struct CommandError(String);

impl<E: std::error::Error> From<E> for CommandError {
    fn from(error: E) -> Self {
        CommandError(error.to_string())
    }
}

impl Serialize for CommandError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}
