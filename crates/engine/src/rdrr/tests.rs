use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::gguf::{test_models::fixture, GgmlType, GgufFile};

/// Small enough that the llama fixture (2.3 MB, its largest tensor 0.9 MB) spans several shards.
const TINY_SHARD: u64 = 1 << 20;
/// Smaller than the fixture's three largest tensors, which then span shards.
const SPANNING_SHARD: u64 = 300 << 10;

/// The fixture written as RDRR into a fresh folder, tensor bytes copied from its map.
fn write_fixture(dir: &Path) -> (GgufFile, WrittenRdrr) {
    write_fixture_in_shards(dir, TINY_SHARD)
}

fn write_fixture_in_shards(dir: &Path, shard_limit: u64) -> (GgufFile, WrittenRdrr) {
    let gguf = GgufFile::open(&fixture("llama3")).unwrap();
    let mut writer = RdrrWriter::create(dir, shard_limit).unwrap();
    for info in gguf.tensors() {
        let data = gguf.tensor_data(info);
        writer.add_tensor(&info.name, info.ggml_type, &info.dims, &mut |out| out.write_all(&data)).unwrap();
    }
    let written = writer.finish(gguf.metadata().iter()).unwrap();
    (gguf, written)
}

#[test]
fn a_round_trip_keeps_every_key_and_byte_across_shards() {
    for shard_limit in [TINY_SHARD, SPANNING_SHARD] {
        let dir = tempfile::tempdir().unwrap();
        let (gguf, written) = write_fixture_in_shards(dir.path(), shard_limit);
        assert!(written.files.len() > 3, "the fixture spans several shards: {:?}", written.files);
        assert_eq!(written.manifest().file_name, MANIFEST_FILE);
        // The sha256s the writer recorded are the shards'.
        let rdrr = open_rdrr(dir.path(), ShardCheck::Sha256).unwrap();
        assert_eq!(rdrr.metadata().len(), gguf.metadata().len());
        for (key, value) in gguf.metadata().iter() {
            assert_eq!(rdrr.metadata().get(key), Some(value), "{key}");
        }
        assert_eq!(rdrr.tensors().len(), gguf.tensors().len());
        let mut spanning = 0;
        for info in gguf.tensors() {
            let read = rdrr.tensor(&info.name).unwrap();
            assert_eq!((&read.dims, read.ggml_type), (&info.dims, info.ggml_type));
            assert_eq!(read.offset % TENSOR_ALIGNMENT, 0);
            assert!(rdrr.tensor_data(read) == gguf.tensor_data(info), "{}", info.name);
            let pieces = rdrr.tensor_bytes(read);
            // Only a tensor larger than a shard spans shards; each piece is whole rows.
            assert_eq!(pieces.pieces().len() > 1, info.n_bytes > shard_limit, "{}", info.name);
            assert!(pieces
                .pieces()
                .iter()
                .all(|piece| (piece.len() as u64).is_multiple_of(info.row_bytes())));
            spanning += usize::from(pieces.pieces().len() > 1);
        }
        assert_eq!(spanning > 0, shard_limit == SPANNING_SHARD);
        for file in &written.files[1..] {
            assert!(file.size <= shard_limit, "{file:?}");
        }
    }
}

/// Bytes that differ from tensor to tensor and from row to row.
fn pattern(seed: u8, len: u64) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed.wrapping_mul(37)).collect()
}

/// Writes `tensors` (name, F32 dims) into shards of `shard_limit` bytes, each tensor's bytes
/// in writes of `write_len` bytes, and reads the model back.
fn write_f32_tensors(dir: &Path, shard_limit: u64, tensors: &[(&str, &[u64])], write_len: usize) -> GgufFile {
    let mut writer = RdrrWriter::create(dir, shard_limit).unwrap();
    for (seed, (name, dims)) in tensors.iter().enumerate() {
        let bytes = pattern(seed as u8, dims.iter().product::<u64>() * 4);
        writer
            .add_tensor(name, GgmlType::F32, dims, &mut |out| {
                bytes.chunks(write_len).try_for_each(|chunk| out.write_all(chunk))
            })
            .unwrap();
    }
    let architecture = crate::gguf::MetadataValue::String("llama".to_string());
    writer.finish([("general.architecture", &architecture)]).unwrap();
    let rdrr = open_rdrr(dir, ShardCheck::Sha256).unwrap();
    for (seed, (name, dims)) in tensors.iter().enumerate() {
        let info = rdrr.tensor(name).unwrap();
        assert_eq!(&info.dims[..], *dims);
        assert!(rdrr.tensor_data(info) == pattern(seed as u8, info.n_bytes), "{name}");
    }
    rdrr
}

/// A tensor's first shard, its offset there and the lengths of its pieces.
type Placement = (usize, u64, Vec<usize>);

/// Each shard's size, and each tensor's placement, as written.
fn layout(dir: &Path, rdrr: &GgufFile) -> (Vec<u64>, Vec<Placement>) {
    let manifest = manifest_json(dir);
    let sizes = manifest["shards"].as_array().unwrap().iter().map(|s| s["size"].as_u64().unwrap()).collect();
    let tensors = manifest["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let info = rdrr.tensor(entry["name"].as_str().unwrap()).unwrap();
            let pieces = rdrr.tensor_bytes(info).pieces().iter().map(|piece| piece.len()).collect();
            (entry["shard"].as_u64().unwrap() as usize, entry["offset"].as_u64().unwrap(), pieces)
        })
        .collect();
    (sizes, tensors)
}

#[test]
fn a_tensor_larger_than_a_shard_spans_the_next_ones_in_whole_rows() {
    const LIMIT: u64 = 4096;
    let dir = tempfile::tempdir().unwrap();
    // Rows of 400 bytes: 10 fit a shard. The norm leaves 3840 bytes of the first shard: the
    // matrix takes 9 rows there, 10 in the next and the last 6 in a third, where the last
    // vector follows it.
    let tensors: &[(&str, &[u64])] =
        &[("norm", &[64]), ("three", &[100, 25]), ("two", &[64, 24]), ("after", &[16])];
    // Writes of 7 bytes cross every row and shard boundary.
    let rdrr = write_f32_tensors(dir.path(), LIMIT, tensors, 7);
    let (sizes, tensors) = layout(dir.path(), &rdrr);
    assert_eq!(
        tensors,
        [
            (0, 0, vec![256]),
            (0, 256, vec![3600, 4000, 2400]),
            // 6144 bytes in rows of 256: 6 rows fill the rest of shard 2, 16 shard 3, 2 shard 4.
            (2, 2560, vec![1536, 4096, 512]),
            (4, 512, vec![64]),
        ]
    );
    assert_eq!(sizes, [3856, 4000, 4096, 4096, 576]);
}

#[test]
fn tensors_that_end_exactly_at_a_shard_boundary_leave_no_empty_shard() {
    const LIMIT: u64 = 4096;
    let dir = tempfile::tempdir().unwrap();
    // One shard exactly; two shards exactly, from a shard's start; then one that fits what
    // is left of no shard and opens the next.
    let tensors: &[(&str, &[u64])] = &[("one", &[1024]), ("two", &[256, 8]), ("small", &[4, 4])];
    // One byte at a time: the sink moves on to the next shard only when a byte needs it.
    let rdrr = write_f32_tensors(dir.path(), LIMIT, tensors, 1);
    let (sizes, tensors) = layout(dir.path(), &rdrr);
    assert_eq!(tensors, [(0, 0, vec![4096]), (1, 0, vec![4096, 4096]), (3, 0, vec![64])]);
    assert_eq!(sizes, [4096, 4096, 4096, 64]);
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

/// The problem the reader finds after `edit` changes the manifest of a model whose matrix
/// "span" (25 rows of 400 bytes) starts at offset 256 of shard 0 and spans shards 0 to 2,
/// followed there by the vector "after" at offset 2560.
fn spanning_problem_after(edit: impl FnOnce(&mut Value)) -> RdrrProblem {
    let dir = tempfile::tempdir().unwrap();
    write_f32_tensors(dir.path(), 4096, &[("norm", &[64]), ("span", &[100, 25]), ("after", &[16])], 4096);
    let mut manifest = manifest_json(dir.path());
    edit(&mut manifest);
    std::fs::write(dir.path().join(MANIFEST_FILE), serde_json::to_vec(&manifest).unwrap()).unwrap();
    invalid(open_rdrr(dir.path(), ShardCheck::Size).expect_err("the edited manifest is refused"))
}

#[test]
fn a_manifest_lying_about_a_spanning_tensor_is_refused_naming_it() {
    // The last shard shorter than the rest of the tensor.
    let problem = spanning_problem_after(|m| m["shards"][2]["size"] = json!(1000));
    assert_eq!(
        problem,
        RdrrProblem::PastLastShard {
            tensor: "span".to_string(),
            shard: "shard-00000.bin".to_string(),
            offset: 256,
            bytes: 10_000,
            missing: 1400,
        }
    );
    assert!(problem.to_string().contains("'span'"), "{problem}");
    // The last shard dropped from the list ("after" moved out of the way).
    let problem = spanning_problem_after(|m| {
        m["shards"].as_array_mut().unwrap().pop();
        m["tensors"][2]["shard"] = json!(0);
        m["tensors"][2]["offset"] = json!(0);
    });
    assert!(
        matches!(&problem, RdrrProblem::PastLastShard { tensor, missing: 2400, .. } if tensor == "span"),
        "{problem}"
    );
    // A first piece of 3596 bytes: not whole rows of 400.
    let problem = spanning_problem_after(|m| m["shards"][0]["size"] = json!(3852));
    assert_eq!(
        problem,
        RdrrProblem::SplitMidRow {
            tensor: "span".to_string(),
            shard: "shard-00000.bin".to_string(),
            piece: 3596,
            row_bytes: 400,
        }
    );
    // Another tensor moved onto the bytes the span continues into.
    let problem = spanning_problem_after(|m| m["tensors"][2]["offset"] = json!(2048));
    assert!(
        matches!(&problem, RdrrProblem::Overlap { first, second, shard } if first == "span" && second == "after" && shard == "shard-00002.bin"),
        "{problem}"
    );
    // Or moved into the middle shard, which the span fills.
    let problem = spanning_problem_after(|m| {
        m["tensors"][2]["shard"] = json!(1);
        m["tensors"][2]["offset"] = json!(3840);
    });
    assert!(matches!(&problem, RdrrProblem::Overlap { .. }), "{problem}");
    // A second tensor on the same bytes: refused where it goes on into a shard the first
    // went on into, before the rest of the table is read.
    let problem = spanning_problem_after(|m| {
        let mut copy = m["tensors"][1].clone();
        copy["name"] = json!("copy");
        m["tensors"].as_array_mut().unwrap().insert(2, copy);
    });
    assert_eq!(
        problem,
        RdrrProblem::Overlap {
            first: "span".to_string(),
            second: "copy".to_string(),
            shard: "shard-00001.bin".to_string()
        }
    );
    // A starting offset past its shard, wherever the shards after it end.
    let problem = spanning_problem_after(|m| m["tensors"][1]["offset"] = json!(4096));
    assert!(matches!(problem, RdrrProblem::PastShardEnd { offset: 4096, .. }), "{problem}");
    // A shape whose size overflows, with the byte count it would wrap to.
    let problem = spanning_problem_after(|m| {
        m["tensors"][1]["shape"] = json!([u64::MAX / 2, 4]);
        m["tensors"][1]["bytes"] = json!(u64::MAX - 7);
    });
    assert!(matches!(problem, RdrrProblem::Shape(_)), "{problem}");
    // A vector (one row) cannot span.
    let problem = spanning_problem_after(|m| {
        m["tensors"][1]["shape"] = json!([2500]);
    });
    assert!(
        matches!(&problem, RdrrProblem::SplitMidRow { tensor, row_bytes: 10_000, .. } if tensor == "span"),
        "{problem}"
    );
    let problem = spanning_problem_after(|m| m["shards"][1]["size"] = json!(0));
    assert_eq!(problem, RdrrProblem::EmptyShard { file: "shard-00001.bin".to_string() });
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
    assert!(matches!(error, RdrrWriteError::RowTooLarge { row_bytes: 2048, limit: 1024, .. }), "{error}");
    // A spanning tensor given too many bytes stops at its end rather than filling shards.
    let error = writer
        .add_tensor("long", GgmlType::F32, &[128, 4], &mut |out| out.write_all(&vec![0; 1 << 20]))
        .unwrap_err();
    assert!(
        matches!(error, RdrrWriteError::WrongLength { expected: 2048, written: 1_048_576, .. }),
        "{error}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "two shards, no more");
    let error =
        writer.add_tensor("short", GgmlType::F32, &[8], &mut |out| out.write_all(&[0; 16])).unwrap_err();
    assert!(matches!(error, RdrrWriteError::WrongLength { expected: 32, written: 16, .. }), "{error}");
    let error = writer.add_tensor("q", GgmlType::Q8_0, &[16], &mut |_| Ok(())).unwrap_err();
    assert!(matches!(error, RdrrWriteError::Shape { .. }), "{error}");
}
