//! `doppler models verify`: an intact model passes; one byte changed in its file (a GGUF, or
//! a shard of an RDRR model, which loading no longer hashes) is found, named with its
//! checksums, and makes the command fail; a name not installed is an error that lists what is.

use std::{
    fs::OpenOptions,
    io::{Seek, SeekFrom, Write},
    path::Path,
    process::{Command, Output},
};

fn doppler(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_doppler"))
        .env("DOPPLER_HOME", home)
        .args(args)
        .output()
        .expect("the doppler binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn verify_finds_a_changed_byte_and_names_the_model() {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/llama3/model.gguf");
    let import = doppler(home.path(), &["models", "import", fixture.to_str().unwrap(), "--name", "tiny"]);
    assert!(import.status.success(), "{}", text(&import.stderr));

    let intact = doppler(home.path(), &["models", "verify"]);
    assert!(intact.status.success(), "{}", text(&intact.stderr));
    assert!(text(&intact.stdout).starts_with("tiny: intact"), "{}", text(&intact.stdout));

    let path = doppler(home.path(), &["models", "path", "tiny"]);
    let model_file = text(&path.stdout).trim().to_string();
    let mut file = OpenOptions::new().write(true).open(&model_file).unwrap();
    file.seek(SeekFrom::Start(4096)).unwrap();
    file.write_all(&[0x5a]).unwrap();
    drop(file);

    let damaged = doppler(home.path(), &["models", "verify", "tiny"]);
    assert!(!damaged.status.success());
    let stdout = text(&damaged.stdout);
    assert!(stdout.starts_with("tiny: damaged: checksum mismatch"), "{stdout}");
    assert!(stdout.contains(&model_file), "{stdout}");
    assert!(
        text(&damaged.stderr).contains("1 of 1 installed models damaged (tiny)"),
        "{}",
        text(&damaged.stderr)
    );

    let unknown = doppler(home.path(), &["models", "verify", "absent"]);
    assert!(!unknown.status.success());
    assert!(text(&unknown.stderr).contains("tiny"), "{}", text(&unknown.stderr));
}

#[test]
fn verify_finds_a_changed_byte_in_a_shard_of_an_rdrr_model() {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf/llama3/model.gguf");
    let convert =
        doppler(home.path(), &["models", "convert", fixture.to_str().unwrap(), "--name", "tiny-rdrr"]);
    assert!(convert.status.success(), "{}", text(&convert.stderr));
    let intact = doppler(home.path(), &["models", "verify", "tiny-rdrr"]);
    assert!(intact.status.success(), "{}", text(&intact.stderr));

    let path = doppler(home.path(), &["models", "path", "tiny-rdrr"]);
    let manifest = std::path::PathBuf::from(text(&path.stdout).trim());
    let model_dir = if manifest.is_dir() { manifest } else { manifest.parent().unwrap().to_path_buf() };
    let shard = std::fs::read_dir(&model_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|extension| extension == "bin"))
        .unwrap_or_else(|| panic!("a shard in {}", model_dir.display()));
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&shard, bytes).unwrap();

    let damaged = doppler(home.path(), &["models", "verify", "tiny-rdrr"]);
    assert!(!damaged.status.success());
    let stdout = text(&damaged.stdout);
    assert!(stdout.starts_with("tiny-rdrr: damaged: checksum mismatch"), "{stdout}");
    assert!(stdout.contains(&shard.display().to_string()), "{stdout}");
}
