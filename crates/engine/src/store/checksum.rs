use std::{
    fs::File,
    io::{self, Read},
    path::Path,
};

use sha2::{Digest, Sha256};

use super::StoreError;

/// Lowercase hex of a SHA-256 digest.
pub fn to_hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A user-given sha256 in canonical (lowercase) form.
pub fn parse_sha256(value: &str) -> Result<String, StoreError> {
    let value = value.trim();
    if value.len() == 64 && value.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(StoreError::InvalidChecksum { value: value.to_string() })
    }
}

/// The sha256 of a file, read in fixed-size chunks.
pub(crate) fn hash_file(path: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    hash_into(&mut hasher, &mut File::open(path)?)?;
    Ok(to_hex(&hasher.finalize()))
}

/// Feeds all of `reader` to `hasher` in fixed-size chunks: the bytes read.
pub fn hash_into(hasher: &mut Sha256, reader: &mut dyn Read) -> io::Result<u64> {
    let mut total = 0u64;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        hasher.update(&buffer[..read]);
        total += read as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_64_hex_digits() {
        let upper = "A5FD3B62230AA5EC60212297DC9D20EAA70578AC519E00D93A17E44C087A6818";
        assert_eq!(parse_sha256(upper).unwrap(), upper.to_ascii_lowercase());
        assert!(parse_sha256(&upper[1..]).is_err());
        assert!(parse_sha256(&format!("{}g", &upper[1..])).is_err());
    }

    #[test]
    fn hashes_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(
            hash_file(&path).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
