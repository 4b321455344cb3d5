//! The reader against malformed files: each is a valid file from the writer with one field
//! patched or the bytes cut, and must fail with the specific error naming what is wrong.

use rand::{Rng, SeedableRng};

use super::*;

const HEADER_LEN: usize = 24;
const TENSOR_COUNT_AT: usize = 8;
const KV_COUNT_AT: usize = 16;
/// The first key/value entry starts right after the header.
const FIRST_KEY_LEN_AT: usize = HEADER_LEN;

fn valid_writer<'a>() -> GgufWriter<'a> {
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llama").unwrap();
    w.add_metadata("llama.block_count", 2u32).unwrap();
    w.add_metadata("tokenizer.ggml.tokens", StringArray::from_iter(["<s>", "a", "bc"])).unwrap();
    w.add_metadata("tokenizer.ggml.scores", vec![0.0f32, -1.0, -2.5]).unwrap();
    w.add_tensor("blk.0.attn_q.weight", &[32, 2], GgmlType::Q8_0, vec![1u8; 68]).unwrap();
    w.add_tensor("output_norm.weight", &[5], GgmlType::F32, vec![2u8; 20]).unwrap();
    w
}

fn valid_file() -> Vec<u8> {
    valid_writer().to_bytes().unwrap()
}

fn malformation(bytes: Vec<u8>) -> Malformation {
    match GgufFile::from_bytes(bytes) {
        Err(GgufError::Malformed { file, problem }) => {
            assert_eq!(file, "<memory>");
            problem
        }
        Err(other) => panic!("expected a malformed-file error, got {other}"),
        Ok(_) => panic!("malformed file was accepted"),
    }
}

fn find(bytes: &[u8], needle: &[u8]) -> usize {
    bytes.windows(needle.len()).position(|w| w == needle).expect("needle present")
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Byte positions of a tensor info's fields: (n_dims, first dim, type id, data offset).
fn tensor_info_fields(bytes: &[u8], name: &str) -> (usize, usize, usize, usize) {
    let n_dims_at = find(bytes, name.as_bytes()) + name.len();
    let n_dims = u32::from_le_bytes(bytes[n_dims_at..n_dims_at + 4].try_into().unwrap()) as usize;
    let dims_at = n_dims_at + 4;
    let type_at = dims_at + 8 * n_dims;
    (n_dims_at, dims_at, type_at, type_at + 4)
}

/// Where the value of metadata key `key` starts (after its type id).
fn value_at(bytes: &[u8], key: &str) -> usize {
    find(bytes, key.as_bytes()) + key.len() + 4
}

#[test]
fn valid_file_reads_back_exactly() {
    let file = GgufFile::from_bytes(valid_file()).unwrap();
    assert_eq!(file.version(), 3);
    assert_eq!(file.alignment(), 32);
    assert_eq!(file.architecture().unwrap(), "llama");
    assert_eq!(file.metadata().len(), 4);
    let q = file.tensor("blk.0.attn_q.weight").unwrap();
    assert_eq!((q.row_len(), q.rows(), q.n_elements(), q.n_bytes), (32, 2, 64, 68));
    assert_eq!(q.offset, file.data_offset());
    assert_eq!(file.tensor_data(q), &[1u8; 68][..]);
    let norm = &file.tensors()[1];
    assert_eq!(norm.name, "output_norm.weight");
    assert_eq!(norm.offset, file.data_offset() + 96, "68 bytes padded to 96");
    assert_eq!(file.tensor_data(norm), &[2u8; 20][..]);
    assert!(file.tensor("missing").is_none());
}

#[test]
fn every_truncation_is_an_error_until_the_last_tensor_ends() {
    let bytes = valid_file();
    let file = GgufFile::from_bytes(bytes.clone()).unwrap();
    let data_end = file.tensors().iter().map(|t| t.offset + t.n_bytes).max().unwrap() as usize;
    for len in 0..bytes.len() {
        let result = GgufFile::from_bytes(bytes[..len].to_vec());
        assert_eq!(result.is_ok(), len >= data_end, "prefix of {len} bytes");
    }
}

#[test]
fn truncation_names_the_section() {
    let bytes = valid_file();
    let section_of_cut = |len: usize| match malformation(bytes[..len].to_vec()) {
        Malformation::Truncated { section, offset, file_size, .. } => {
            assert_eq!(file_size, len as u64);
            assert!(offset <= len as u64);
            section
        }
        other => panic!("cut at {len}: {other}"),
    };
    assert_eq!(section_of_cut(2), Section::Header);
    assert_eq!(section_of_cut(HEADER_LEN - 3), Section::Header);
    assert_eq!(section_of_cut(value_at(&bytes, "llama.block_count") + 2), Section::Metadata);
    assert_eq!(section_of_cut(find(&bytes, b"bc") + 1), Section::Metadata);
    let (n_dims_at, ..) = tensor_info_fields(&bytes, "output_norm.weight");
    assert_eq!(section_of_cut(n_dims_at + 6), Section::TensorInfo);

    let file = GgufFile::from_bytes(bytes.clone()).unwrap();
    let norm = file.tensor("output_norm.weight").unwrap();
    let cut = (norm.offset + 10) as usize;
    assert_eq!(
        malformation(bytes[..cut].to_vec()),
        Malformation::TensorPastEnd {
            tensor: "output_norm.weight".into(),
            offset: norm.offset,
            n_bytes: 20,
            file_size: cut as u64,
        }
    );
}

#[test]
fn wrong_magic_is_named() {
    let mut bytes = valid_file();
    bytes[..4].copy_from_slice(b"GGML");
    let err = GgufFile::from_bytes(bytes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "<memory>: not a GGUF file (magic bytes [47, 47, 4d, 4c], expected \"GGUF\")"
    );
}

#[test]
fn only_versions_2_and_3_are_read() {
    for (version, accepted) in [(1, false), (2, true), (3, true), (4, false), (0x0300_0000, false)] {
        let mut bytes = valid_file();
        put_u32(&mut bytes, 4, version);
        match GgufFile::from_bytes(bytes) {
            Ok(file) => {
                assert!(accepted, "version {version} accepted");
                assert_eq!(file.version(), version);
            }
            Err(GgufError::Malformed {
                problem: Malformation::UnsupportedVersion { version: v, hint },
                ..
            }) => {
                assert!(!accepted, "version {version} refused");
                assert_eq!(v, version);
                match version {
                    1 => assert!(hint.contains("obsolete")),
                    0x0300_0000 => assert!(hint.contains("big-endian")),
                    _ => assert_eq!(hint, ""),
                }
            }
            Err(other) => panic!("version {version}: {other}"),
        }
    }
}

#[test]
fn absurd_counts_fail_before_allocating() {
    let mut bytes = valid_file();
    put_u64(&mut bytes, KV_COUNT_AT, 1 << 60);
    assert!(matches!(
        malformation(bytes),
        Malformation::CountTooLarge { section: Section::Metadata, count, .. } if count == 1 << 60
    ));

    let mut bytes = valid_file();
    put_u64(&mut bytes, TENSOR_COUNT_AT, u64::MAX);
    assert!(matches!(
        malformation(bytes),
        Malformation::CountTooLarge { section: Section::TensorInfo, count: u64::MAX, .. }
    ));

    // Length of the first key.
    let mut bytes = valid_file();
    put_u64(&mut bytes, FIRST_KEY_LEN_AT, 1 << 63);
    assert!(matches!(
        malformation(bytes),
        Malformation::Truncated { section: Section::Metadata, needed, offset, .. }
            if needed == 1 << 63 && offset == FIRST_KEY_LEN_AT as u64 + 8
    ));

    // Length of a string value.
    let mut bytes = valid_file();
    let at = value_at(&bytes, "general.architecture");
    put_u64(&mut bytes, at, u64::MAX);
    let problem = malformation(bytes);
    assert!(
        matches!(&problem, Malformation::Truncated { what, needed: u64::MAX, .. } if what.contains("general.architecture")),
        "{problem}"
    );

    // Element count of the string array: 2^61 strings of at least 8 bytes overflows u64.
    let mut bytes = valid_file();
    let count_at = value_at(&bytes, "tokenizer.ggml.tokens") + 4;
    for count in [1 << 61, 1 << 40, 1000] {
        put_u64(&mut bytes, count_at, count);
        let problem = malformation(bytes.clone());
        assert!(
            matches!(&problem, Malformation::CountTooLarge { what, count: c, .. }
                if *c == count && what.contains("tokenizer.ggml.tokens")),
            "{problem}"
        );
    }

    // Element count of the f32 array.
    let mut bytes = valid_file();
    let count_at = value_at(&bytes, "tokenizer.ggml.scores") + 4;
    put_u64(&mut bytes, count_at, u64::MAX / 2);
    assert!(matches!(malformation(bytes), Malformation::CountTooLarge { .. }));
}

#[test]
fn tensor_past_the_end_names_tensor_offset_and_size() {
    let mut bytes = valid_file();
    let (.., offset_at) = tensor_info_fields(&bytes, "output_norm.weight");
    put_u64(&mut bytes, offset_at, 1024);
    let data_offset = GgufFile::from_bytes(valid_file()).unwrap().data_offset();
    let size = bytes.len() as u64;
    let err = GgufFile::from_bytes(bytes).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "<memory>: tensor 'output_norm.weight' data [offset {}, 20 bytes] extends past end of file (size {size})",
            data_offset + 1024
        )
    );

    let mut bytes = valid_file();
    put_u64(&mut bytes, offset_at, u64::MAX - 31);
    assert_eq!(
        malformation(bytes),
        Malformation::DataOffsetOverflow { tensor: "output_norm.weight".into(), offset: u64::MAX - 31 }
    );
}

#[test]
fn open_errors_name_the_path() {
    let path = std::env::temp_dir().join(format!("doppler-gguf-test-{}-model.gguf", std::process::id()));
    let mut bytes = valid_file();
    bytes.truncate(bytes.len() - 40);
    std::fs::write(&path, &bytes).unwrap();
    let err = GgufFile::open(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("{}: tensor 'output_norm.weight' data [offset ", path.display())),
        "{message}"
    );
    assert!(message.ends_with(&format!("extends past end of file (size {})", bytes.len())), "{message}");
}

#[test]
fn unknown_tensor_type_names_tensor_and_id() {
    for id in [4, 31, 99, u32::MAX] {
        let mut bytes = valid_file();
        let (.., type_at, _) = tensor_info_fields(&bytes, "blk.0.attn_q.weight");
        put_u32(&mut bytes, type_at, id);
        let err = GgufFile::from_bytes(bytes).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("<memory>: tensor 'blk.0.attn_q.weight': unknown ggml type id {id}")
        );
    }
}

#[test]
fn misaligned_offset_is_refused() {
    let mut bytes = valid_file();
    let (.., offset_at) = tensor_info_fields(&bytes, "output_norm.weight");
    put_u64(&mut bytes, offset_at, 100);
    assert_eq!(
        malformation(bytes),
        Malformation::MisalignedTensor { tensor: "output_norm.weight".into(), offset: 100, alignment: 32 }
    );
}

#[test]
fn dims_are_checked() {
    // Dimension count 0 and 5.
    for n_dims in [0, 5, u32::MAX] {
        let mut bytes = valid_file();
        let (n_dims_at, ..) = tensor_info_fields(&bytes, "blk.0.attn_q.weight");
        put_u32(&mut bytes, n_dims_at, n_dims);
        assert_eq!(
            malformation(bytes),
            Malformation::DimensionCount { tensor: "blk.0.attn_q.weight".into(), n_dims }
        );
    }
    let (_, dims_at, ..) = tensor_info_fields(&valid_file(), "blk.0.attn_q.weight");

    let mut bytes = valid_file();
    put_u64(&mut bytes, dims_at + 8, 0);
    assert!(matches!(malformation(bytes), Malformation::ZeroDimension { dims, .. } if dims == [32, 0]));

    // 2^5 · 2^59 = 2^64 elements overflow u64; 2^5 · (2^58 + 1) exceeds ggml's i64 count;
    // 2^32 · 2^32 overflows too.
    for rows in [1u64 << 59, (1 << 58) + 1] {
        let mut bytes = valid_file();
        put_u64(&mut bytes, dims_at + 8, rows);
        let problem = malformation(bytes);
        assert!(
            matches!(&problem, Malformation::SizeOverflow { type_name: "Q8_0", .. }),
            "{rows}: {problem}"
        );
    }
    let mut bytes = valid_file();
    put_u64(&mut bytes, dims_at, 1 << 32);
    put_u64(&mut bytes, dims_at + 8, 1 << 32);
    assert!(matches!(malformation(bytes), Malformation::SizeOverflow { .. }));

    // A row that is not whole Q8_0 blocks.
    let mut bytes = valid_file();
    put_u64(&mut bytes, dims_at, 33);
    assert!(matches!(
        malformation(bytes),
        Malformation::RowNotWholeBlocks { row_len: 33, block_len: 32, .. }
    ));
}

#[test]
fn duplicates_are_refused() {
    let mut w = GgufWriter::new();
    w.add_metadata("key.a", 1u8).unwrap();
    w.add_metadata("key.b", 2u8).unwrap();
    w.add_tensor("t.a", &[1], GgmlType::F32, vec![0; 4]).unwrap();
    w.add_tensor("t.b", &[1], GgmlType::F32, vec![0; 4]).unwrap();
    let bytes = w.to_bytes().unwrap();

    let mut dup_key = bytes.clone();
    let at = find(&dup_key, b"key.b");
    dup_key[at + 4] = b'a';
    assert_eq!(malformation(dup_key), Malformation::DuplicateKey { key: "key.a".into() });

    let mut dup_tensor = bytes.clone();
    let at = find(&dup_tensor, b"t.b");
    dup_tensor[at + 2] = b'a';
    assert_eq!(malformation(dup_tensor), Malformation::DuplicateTensor { tensor: "t.a".into() });
}

#[test]
fn metadata_values_are_validated() {
    let mut bytes = valid_file();
    let at = value_at(&bytes, "llama.block_count") - 4;
    put_u32(&mut bytes, at, 13);
    assert_eq!(
        malformation(bytes),
        Malformation::UnknownValueType { key: "llama.block_count".into(), id: 13 }
    );

    let mut bytes = valid_file();
    let at = find(&bytes, b"llama");
    bytes[at] = 0xFF;
    assert!(matches!(malformation(bytes), Malformation::InvalidUtf8 { section: Section::Metadata, .. }));

    let mut w = GgufWriter::new();
    w.add_metadata("flag", true).unwrap();
    let mut bytes = w.to_bytes().unwrap();
    let at = value_at(&bytes, "flag");
    bytes[at] = 2;
    assert_eq!(
        malformation(bytes),
        Malformation::InvalidBool { key: "flag".into(), value: 2, offset: at as u64 }
    );
}

#[test]
fn array_nesting_is_bounded() {
    fn nested(depth: usize) -> MetadataArray {
        (0..depth).fold(MetadataArray::U8(vec![1, 2]), |inner, _| MetadataArray::Array(vec![inner]))
    }
    for depth in 0..6 {
        let mut w = GgufWriter::new();
        w.add_metadata("nested", nested(depth)).unwrap();
        let result = GgufFile::from_bytes(w.to_bytes().unwrap());
        // depth 0 is a plain array (one level); the limit is four levels.
        if depth < 4 {
            let file = result.unwrap();
            assert_eq!(file.metadata().get("nested"), Some(&MetadataValue::Array(nested(depth))));
        } else {
            assert!(matches!(
                result,
                Err(GgufError::Malformed { problem: Malformation::NestingTooDeep { max_depth: 4, .. }, .. })
            ));
        }
    }
}

#[test]
fn alignment_is_validated_and_honoured() {
    let mut w = GgufWriter::new();
    w.add_metadata("general.alignment", 64u32).unwrap();
    w.add_tensor("a", &[3], GgmlType::F32, vec![7; 12]).unwrap();
    w.add_tensor("b", &[1], GgmlType::F16, vec![9; 2]).unwrap();
    let bytes = w.to_bytes().unwrap();
    let file = GgufFile::from_bytes(bytes.clone()).unwrap();
    assert_eq!(file.alignment(), 64);
    assert_eq!(file.data_offset() % 64, 0);
    assert_eq!(file.tensor("b").unwrap().offset, file.data_offset() + 64);
    assert_eq!(file.tensor_data(file.tensor("b").unwrap()), &[9u8, 9][..]);

    let at = value_at(&bytes, "general.alignment");
    for bad in [0u32, 48] {
        let mut patched = bytes.clone();
        put_u32(&mut patched, at, bad);
        assert_eq!(malformation(patched), Malformation::BadAlignment { value: bad.into() });
    }
    let mut wrong_type = bytes.clone();
    put_u32(&mut wrong_type, at - 4, 6); // f32
    assert!(matches!(malformation(wrong_type), Malformation::AlignmentType(_)));
}

#[test]
fn no_tensors_and_no_metadata_is_valid() {
    let bytes = GgufWriter::new().to_bytes().unwrap();
    assert_eq!(bytes.len(), 32, "24-byte header padded to the alignment");
    let file = GgufFile::from_bytes(bytes).unwrap();
    assert!(file.tensors().is_empty() && file.metadata().is_empty());
    assert!(matches!(file.architecture(), Err(GgufError::MissingKey { .. })));
    GgufFile::from_bytes(GgufWriter::new().to_bytes().unwrap()[..HEADER_LEN].to_vec()).unwrap();
}

#[test]
fn random_corruption_never_panics() {
    let bytes = valid_file();
    let structure_end = GgufFile::from_bytes(bytes.clone()).unwrap().data_offset() as usize;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..20_000 {
        let mut corrupt = bytes.clone();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..structure_end);
            corrupt[at] = match rng.random_range(0..3) {
                0 => rng.random(),
                1 => 0xFF,
                _ => 0,
            };
        }
        if let Ok(file) = GgufFile::from_bytes(corrupt) {
            for info in file.tensors() {
                assert_eq!(file.tensor_data(info).len() as u64, info.n_bytes);
            }
        }
    }
}

#[test]
fn writer_round_trips_every_value_type() {
    let values: Vec<(&str, MetadataValue)> = vec![
        ("u8", MetadataValue::U8(200)),
        ("i8", MetadataValue::I8(-100)),
        ("u16", MetadataValue::U16(60000)),
        ("i16", MetadataValue::I16(-30000)),
        ("u32", MetadataValue::U32(4_000_000_000)),
        ("i32", MetadataValue::I32(-2_000_000_000)),
        ("u64", MetadataValue::U64(u64::MAX)),
        ("i64", MetadataValue::I64(i64::MIN)),
        ("f32", MetadataValue::F32(1e-6)),
        ("f64", MetadataValue::F64(-1e300)),
        ("bool", MetadataValue::Bool(true)),
        ("string", MetadataValue::String("héllo ▁world".into())),
        ("empty", MetadataValue::String(String::new())),
        ("a.u8", MetadataArray::U8(vec![0, 255]).into()),
        ("a.i8", MetadataArray::I8(vec![-128, 127]).into()),
        ("a.u16", MetadataArray::U16(vec![1, 65535]).into()),
        ("a.i16", MetadataArray::I16(vec![-1]).into()),
        ("a.u32", MetadataArray::U32(vec![]).into()),
        ("a.i32", MetadataArray::I32(vec![i32::MIN, 3]).into()),
        ("a.u64", MetadataArray::U64(vec![u64::MAX]).into()),
        ("a.i64", MetadataArray::I64(vec![-5]).into()),
        ("a.f32", MetadataArray::F32(vec![0.5, -0.25]).into()),
        ("a.f64", MetadataArray::F64(vec![1e-300]).into()),
        ("a.bool", MetadataArray::Bool(vec![true, false, true]).into()),
        ("a.string", StringArray::from_iter(["", "x", "ÿz"]).into()),
        (
            "a.nested",
            MetadataArray::Array(vec![
                MetadataArray::U8(vec![1]),
                MetadataArray::String(StringArray::from_iter(["q"])),
            ])
            .into(),
        ),
    ];
    let mut w = GgufWriter::new();
    for (key, value) in &values {
        w.add_metadata(*key, value.clone()).unwrap();
    }
    let file = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
    let read: Vec<(&str, &MetadataValue)> = file.metadata().iter().collect();
    assert_eq!(read.len(), values.len());
    for ((key, value), (read_key, read_value)) in values.iter().zip(read) {
        assert_eq!((*key, value), (read_key, read_value));
    }
}

#[test]
fn writer_streams_tensor_data_and_checks_its_length() {
    let mut w = GgufWriter::new();
    let n_bytes = w
        .add_tensor_streamed("big", &[256, 3], GgmlType::Q4_K, |out| out.write_all(&[5u8; 3 * 144]))
        .unwrap();
    assert_eq!(n_bytes, 3 * 144);
    let file = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
    assert_eq!(file.tensor_data(file.tensor("big").unwrap()), &[5u8; 432][..]);

    let mut w = GgufWriter::new();
    w.add_tensor_streamed("short", &[32], GgmlType::Q8_0, |out| out.write_all(&[0; 33])).unwrap();
    assert!(matches!(w.to_bytes(), Err(GgufWriteError::DataLength { expected: 34, actual: 33, .. })));
}

#[test]
fn writer_refuses_invalid_tensors_and_keys() {
    let mut w = GgufWriter::new();
    w.add_metadata("k", 1u32).unwrap();
    assert!(matches!(w.add_metadata("k", 2u32), Err(GgufWriteError::DuplicateKey { .. })));
    assert!(matches!(w.add_metadata("general.alignment", 24u32), Err(GgufWriteError::BadAlignment { .. })));
    assert!(matches!(w.add_metadata("general.alignment", 64u64), Err(GgufWriteError::BadAlignment { .. })));
    w.add_tensor("t", &[32], GgmlType::Q8_0, vec![0; 34]).unwrap();
    assert!(matches!(
        w.add_tensor("t", &[32], GgmlType::Q8_0, vec![0; 34]),
        Err(GgufWriteError::DuplicateTensor { .. })
    ));
    for dims in [&[][..], &[1, 1, 1, 1, 1], &[32, 0], &[16], &[32, u64::MAX]] {
        assert!(
            matches!(w.add_tensor("u", dims, GgmlType::Q8_0, vec![]), Err(GgufWriteError::BadShape { .. })),
            "{dims:?}"
        );
    }
    assert!(matches!(
        w.add_tensor("u", &[32], GgmlType::Q8_0, vec![0; 35]),
        Err(GgufWriteError::DataLength { expected: 34, actual: 35, .. })
    ));
}

#[test]
fn counts_that_fit_the_file_are_still_bounded() {
    let over = |problem: Malformation, expected_what: &str, expected_limit: u64| match problem {
        Malformation::CountOverLimit { what, limit, .. } => {
            assert!(what.contains(expected_what), "{what}");
            assert_eq!(limit, expected_limit);
        }
        other => panic!("expected a count over the limit, got {other}"),
    };
    let mut w = valid_writer();
    w.add_metadata("big.array", MetadataArray::U8(vec![0; file::MAX_ARRAY_LEN as usize + 1])).unwrap();
    over(malformation(w.to_bytes().unwrap()), "big.array", file::MAX_ARRAY_LEN);

    let mut w = GgufWriter::new();
    for i in 0..=file::MAX_METADATA_ENTRIES {
        w.add_metadata(format!("k{i}"), 0u8).unwrap();
    }
    over(malformation(w.to_bytes().unwrap()), "metadata key/value", file::MAX_METADATA_ENTRIES);

    let mut w = GgufWriter::new();
    for i in 0..=file::MAX_TENSORS {
        w.add_tensor(format!("t{i}"), &[1], GgmlType::F32, vec![0u8; 4]).unwrap();
    }
    over(malformation(w.to_bytes().unwrap()), "tensor info", file::MAX_TENSORS);
}

#[test]
fn overlapping_tensors_are_refused() {
    let mut bytes = valid_file();
    // output_norm's data moved onto blk.0.attn_q's (offset 0).
    let (.., offset_at) = tensor_info_fields(&bytes, "output_norm.weight");
    put_u64(&mut bytes, offset_at, 32);
    assert_eq!(
        malformation(bytes),
        Malformation::OverlappingTensors {
            first: "blk.0.attn_q.weight".to_string(),
            second: "output_norm.weight".to_string(),
            offset: GgufFile::from_bytes(valid_file()).unwrap().data_offset() + 32,
        }
    );
}
