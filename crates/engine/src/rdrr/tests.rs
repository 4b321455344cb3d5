use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::gguf::{test_models::fixture, GgmlType, GgufFile};

/// Small enough that the llama fixture (2.3 MB, its largest tensor 0.9 MB) spans several shards.
const TINY_SHARD: u64 = 1 << 20;

/// The fixture written as RDRR into a fresh folder, tensor bytes copied from its map.
fn write_fixture(dir: &Path) -> (GgufFile, WrittenRdrr) {
    let gguf = GgufFile::open(&fixture("llama3")).unwrap();
    let mut writer = RdrrWriter::create(dir, TINY_SHARD).unwrap();
    for info in gguf.tensors() {
        let data = gguf.tensor_data(info);
        writer.add_tensor(&info.name, info.ggml_type, &info.dims, &mut |out| out.write_all(data)).unwrap();
    }
    let written = writer.finish(gguf.metadata().iter()).unwrap();
    (gguf, written)
}

#[test]
fn a_round_trip_keeps_every_key_and_byte_across_shards() {
    let dir = tempfile::tempdir().unwrap();
    let (gguf, written) = write_fixture(dir.path());
    assert!(written.files.len() > 3, "the fixture spans several shards: {:?}", written.files);
    assert_eq!(written.manifest().file_name, MANIFEST_FILE);
    // The sha256s the writer recorded are the shards'.
    let rdrr = open_rdrr(dir.path(), ShardCheck::Sha256).unwrap();
    assert_eq!(rdrr.metadata().len(), gguf.metadata().len());
    for (key, value) in gguf.metadata().iter() {
        assert_eq!(rdrr.metadata().get(key), Some(value), "{key}");
    }
    assert_eq!(rdrr.tensors().len(), gguf.tensors().len());
    for info in gguf.tensors() {
        let read = rdrr.tensor(&info.name).unwrap();
        assert_eq!((&read.dims, read.ggml_type), (&info.dims, info.ggml_type));
        assert_eq!(read.offset % TENSOR_ALIGNMENT, 0);
        assert!(rdrr.tensor_data(read) == gguf.tensor_data(info), "{}", info.name);
    }
    for file in &written.files[1..] {
        assert!(file.size <= TINY_SHARD, "{file:?}");
    }
}

fn manifest_json(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join(MANIFEST_FILE)).unwrap()).unwrap()
}

/// The problem the reader finds after `edit` changes a valid manifest.
fn problem_after(edit: impl FnOnce(&mut Value)) -> RdrrError {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let mut manifest = manifest_json(dir.path());
    edit(&mut manifest);
    std::fs::write(dir.path().join(MANIFEST_FILE), serde_json::to_vec(&manifest).unwrap()).unwrap();
    open_rdrr(dir.path(), ShardCheck::Size).expect_err("the edited manifest is refused")
}

fn invalid(error: RdrrError) -> RdrrProblem {
    match error {
        RdrrError::Invalid { problem, .. } => problem,
        other => panic!("expected a manifest problem, got {other}"),
    }
}

#[test]
fn a_manifest_lying_about_tensors_is_refused_naming_the_tensor() {
    let problem = invalid(problem_after(|m| {
        m["tensors"][1]["offset"] = json!(m["tensors"][1]["offset"].as_u64().unwrap() + 4)
    }));
    assert!(matches!(problem, RdrrProblem::Misaligned { .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["tensors"][0]["offset"] = json!(TINY_SHARD)));
    assert!(matches!(problem, RdrrProblem::PastShardEnd { .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["tensors"][0]["offset"] = json!(u64::MAX - 255)));
    assert!(matches!(problem, RdrrProblem::PastShardEnd { .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["tensors"][0]["bytes"] = json!(1)));
    assert!(matches!(problem, RdrrProblem::ByteLength { stated: 1, .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["tensors"][0]["type"] = json!("Q9_K")));
    assert!(matches!(problem, RdrrProblem::UnknownType { .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["tensors"][0]["shard"] = json!(999)));
    assert!(matches!(problem, RdrrProblem::NoSuchShard { shard: 999, .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["tensors"][0]["shape"] = json!([1, 1, 1, 1, 1])));
    assert!(matches!(problem, RdrrProblem::DimensionCount { n_dims: 5, .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["tensors"][0]["shape"] = json!([0, 64])));
    assert!(problem.to_string().contains("zero"), "{problem}");

    let problem = invalid(problem_after(|m| {
        let first = m["tensors"][0].clone();
        m["tensors"].as_array_mut().unwrap().push(first);
    }));
    assert!(matches!(problem, RdrrProblem::DuplicateTensor { .. }), "{problem}");

    // Two tensors of one shard pointed at the same bytes.
    let problem = invalid(problem_after(|m| {
        let tensors = m["tensors"].as_array_mut().unwrap();
        let (a, b) = (0..tensors.len())
            .flat_map(|a| (a + 1..tensors.len()).map(move |b| (a, b)))
            .find(|&(a, b)| {
                tensors[a]["shard"] == tensors[b]["shard"] && tensors[a]["bytes"] == tensors[b]["bytes"]
            })
            .expect("two tensors of one size in one shard");
        tensors[b]["offset"] = tensors[a]["offset"].clone();
    }));
    assert!(matches!(problem, RdrrProblem::Overlap { .. }), "{problem}");
}

#[test]
fn a_manifest_lying_about_shards_or_metadata_is_refused() {
    let problem = invalid(problem_after(|m| m["shards"][0]["file"] = json!("../model.gguf")));
    assert!(matches!(problem, RdrrProblem::ShardName { .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["shards"][0]["size"] = json!(MAX_SHARD_BYTES + 1)));
    assert!(matches!(problem, RdrrProblem::ShardTooLarge { .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["shards"][0]["sha256"] = json!("abc")));
    assert!(matches!(problem, RdrrProblem::BadChecksum { .. }), "{problem}");

    let problem = invalid(problem_after(|m| m["alignment"] = json!(3)));
    assert!(matches!(problem, RdrrProblem::BadAlignment { value: 3 }), "{problem}");

    let problem = invalid(problem_after(|m| m["config"]["tokenizer.ggml.model"] = json!({"string": "gpt2"})));
    assert!(matches!(problem, RdrrProblem::MisplacedKey { section: "config", .. }), "{problem}");

    let problem = invalid(problem_after(|m| {
        m["metadata"]["general.deep"] =
            json!({"array": {"array": [{"array": [{"array": [{"array": [{"u8": [1]}]}]}]}]}})
    }));
    assert!(matches!(problem, RdrrProblem::NestingTooDeep { .. }), "{problem}");

    let error = problem_after(|m| m["format_version"] = json!(2));
    assert!(matches!(error, RdrrError::UnsupportedVersion { version: 2, .. }), "{error}");

    let error = problem_after(|m| m["format"] = json!("gguf"));
    assert!(matches!(error, RdrrError::NotRdrr { .. }), "{error}");

    let error = problem_after(|m| m["surprise"] = json!(1));
    assert!(matches!(error, RdrrError::ManifestJson { .. }), "{error}");
}

#[test]
fn a_truncated_shard_is_refused_on_load_and_a_changed_one_when_hashing() {
    let dir = tempfile::tempdir().unwrap();
    let (_, written) = write_fixture(dir.path());
    let shard = &written.files[2];
    let mut bytes = std::fs::read(&shard.path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&shard.path, &bytes).unwrap();
    let error = open_rdrr(dir.path(), ShardCheck::Sha256).err().unwrap();
    assert!(matches!(&error, RdrrError::ShardChecksum { path, .. } if path == &shard.path), "{error}");
    assert!(error.to_string().contains(&shard.sha256), "{error}");
    // A load checks sizes only: a changed byte is `doppler models verify`'s to find.
    open_rdrr(dir.path(), ShardCheck::Size).unwrap();

    bytes.pop();
    std::fs::write(&shard.path, &bytes).unwrap();
    for check in [ShardCheck::Size, ShardCheck::Sha256] {
        let error = open_rdrr(dir.path(), check).err().unwrap();
        assert!(matches!(&error, RdrrError::ShardSize { path, .. } if path == &shard.path), "{error}");
    }

    std::fs::remove_file(&shard.path).unwrap();
    assert!(matches!(open_rdrr(dir.path(), ShardCheck::Size), Err(RdrrError::Io { .. })));
}

#[test]
fn the_writer_refuses_what_a_shard_cannot_hold_or_a_wrong_length() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = RdrrWriter::create(dir.path(), 1024).unwrap();
    let error =
        writer.add_tensor("big", GgmlType::F32, &[512], &mut |out| out.write_all(&[0; 2048])).unwrap_err();
    assert!(matches!(error, RdrrWriteError::TensorTooLarge { bytes: 2048, limit: 1024, .. }), "{error}");
    let error =
        writer.add_tensor("short", GgmlType::F32, &[8], &mut |out| out.write_all(&[0; 16])).unwrap_err();
    assert!(matches!(error, RdrrWriteError::WrongLength { expected: 32, written: 16, .. }), "{error}");
    let error = writer.add_tensor("q", GgmlType::Q8_0, &[16], &mut |_| Ok(())).unwrap_err();
    assert!(matches!(error, RdrrWriteError::Shape { .. }), "{error}");
}
