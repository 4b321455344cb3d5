//! Reads an RDRR model into the engine's model-file view ([`GgufFile`]): metadata, tensor
//! table and each tensor's bytes in its memory-mapped shard.

use std::{
    collections::HashSet,
    fs::File,
    io::Read,
    path::{Path, PathBuf},
};

use memmap2::Mmap;
use sha2::{Digest, Sha256};

use super::{
    error::{RdrrError, RdrrProblem},
    manifest::RdrrManifest,
    FORMAT_NAME, FORMAT_VERSION, MANIFEST_FILE, MAX_MANIFEST_BYTES, MAX_SHARDS, MAX_SHARD_BYTES,
};
use crate::{
    gguf::{tensor_byte_size, GgmlType, GgufFile, ShardRange, TensorInfo, MAX_DIMS, MAX_TENSORS},
    store::{hash_into, is_plain_file_name, to_hex},
};

/// How much of each shard [`open_rdrr`] checks against the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardCheck {
    /// Its size: a missing, truncated or grown shard is refused. What loading does: hashing
    /// costs seconds per gigabyte, and every shard was hashed when it was written or
    /// downloaded (the store records the sha256s, and `doppler models verify` checks them).
    Size,
    /// Its size and sha256, reading every byte: for models whose shards nobody checked.
    Sha256,
}

/// Opens the RDRR model at `path` (its `rdrr.json`, or the folder holding it): the manifest
/// is checked against the limits and the shards on disk, each shard as `check` says, then
/// the shards are memory-mapped. Nothing in the manifest is trusted: a tensor can only reach
/// bytes inside its shard, whatever the shards hold.
pub fn open_rdrr(path: &Path, check: ShardCheck) -> Result<GgufFile, RdrrError> {
    let manifest_path = if path.is_dir() { path.join(MANIFEST_FILE) } else { path.to_path_buf() };
    let manifest = read_manifest(&manifest_path)?;
    let invalid = |problem| RdrrError::Invalid { path: manifest_path.clone(), problem };
    check_shard_list(&manifest).map_err(invalid)?;
    let metadata = manifest.to_metadata().map_err(invalid)?;
    let (tensors, tensor_pieces) = check_tensors(&manifest).map_err(invalid)?;
    let dir = manifest_path.parent().unwrap_or(Path::new("."));
    let maps = manifest
        .shards
        .iter()
        .map(|shard| {
            map_checked(
                &dir.join(&shard.file),
                shard.size,
                (check == ShardCheck::Sha256).then_some(shard.sha256.as_str()),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(GgufFile::from_shards(manifest_path.display().to_string(), metadata, tensors, tensor_pieces, maps))
}

fn read_manifest(path: &Path) -> Result<RdrrManifest, RdrrError> {
    let io_error = |source| RdrrError::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io_error)?;
    let size = file.metadata().map_err(io_error)?.len();
    if size > MAX_MANIFEST_BYTES {
        return Err(RdrrError::ManifestTooLarge {
            path: path.to_path_buf(),
            size,
            limit: MAX_MANIFEST_BYTES,
        });
    }
    let mut text = Vec::with_capacity(size as usize);
    file.take(MAX_MANIFEST_BYTES).read_to_end(&mut text).map_err(io_error)?;
    // The format and version are read first, so a newer manifest gets a version error rather
    // than a complaint about a field this build does not know.
    #[derive(serde::Deserialize)]
    struct Header {
        format: String,
        format_version: u32,
    }
    let json_error = |source| RdrrError::ManifestJson { path: path.to_path_buf(), source };
    let header: Header = serde_json::from_slice(&text).map_err(json_error)?;
    if header.format != FORMAT_NAME {
        return Err(RdrrError::NotRdrr { path: path.to_path_buf(), found: header.format });
    }
    if header.format_version != FORMAT_VERSION {
        return Err(RdrrError::UnsupportedVersion {
            path: path.to_path_buf(),
            version: header.format_version,
            supported: FORMAT_VERSION,
        });
    }
    serde_json::from_slice(&text).map_err(json_error)
}

fn check_shard_list(manifest: &RdrrManifest) -> Result<(), RdrrProblem> {
    if manifest.shards.len() > MAX_SHARDS {
        return Err(RdrrProblem::TooMany {
            what: "shards",
            count: manifest.shards.len() as u64,
            limit: MAX_SHARDS as u64,
        });
    }
    if !(32..=65536).contains(&manifest.alignment) || !manifest.alignment.is_power_of_two() {
        return Err(RdrrProblem::BadAlignment { value: manifest.alignment });
    }
    let mut files = HashSet::new();
    for shard in &manifest.shards {
        if !is_plain_file_name(&shard.file) || shard.file == MANIFEST_FILE {
            return Err(RdrrProblem::ShardName { file: shard.file.clone() });
        }
        if !files.insert(shard.file.as_str()) {
            return Err(RdrrProblem::DuplicateShard { file: shard.file.clone() });
        }
        if shard.size == 0 {
            return Err(RdrrProblem::EmptyShard { file: shard.file.clone() });
        }
        if shard.size > MAX_SHARD_BYTES {
            return Err(RdrrProblem::ShardTooLarge {
                file: shard.file.clone(),
                size: shard.size,
                limit: MAX_SHARD_BYTES,
            });
        }
        let is_hex =
            shard.sha256.len() == 64 && shard.sha256.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !is_hex {
            return Err(RdrrProblem::BadChecksum { file: shard.file.clone(), value: shard.sha256.clone() });
        }
    }
    Ok(())
}

/// The tensor table as the engine sees it (ggml-order dims, offsets within their first
/// shard) and each tensor's ranges in the shards, every entry checked: its type known, its
/// byte length its type and shape's, its start aligned and inside its shard, its bytes
/// inside the shards and overlapping no other tensor's.
fn check_tensors(manifest: &RdrrManifest) -> Result<(Vec<TensorInfo>, Vec<Vec<ShardRange>>), RdrrProblem> {
    let count = manifest.tensors.len() as u64;
    if count > MAX_TENSORS {
        return Err(RdrrProblem::TooMany { what: "tensors", count, limit: MAX_TENSORS });
    }
    let mut names = HashSet::new();
    let mut infos: Vec<TensorInfo> = Vec::with_capacity(manifest.tensors.len());
    let mut tensor_pieces: Vec<Vec<ShardRange>> = Vec::with_capacity(manifest.tensors.len());
    // The tensor that goes on into each shard: two would overlap at its start. Checked as
    // the table is read, so a crafted table of tensors each spanning every shard is refused
    // before its ranges take memory by the billion.
    let mut continued_into: Vec<Option<usize>> = vec![None; manifest.shards.len()];
    for entry in &manifest.tensors {
        let tensor = || entry.name.clone();
        if !names.insert(entry.name.as_str()) {
            return Err(RdrrProblem::DuplicateTensor { tensor: tensor() });
        }
        if entry.shape.is_empty() || entry.shape.len() > MAX_DIMS as usize {
            return Err(RdrrProblem::DimensionCount { tensor: tensor(), n_dims: entry.shape.len() });
        }
        let ty = GgmlType::all()
            .find(|ty| ty.name() == entry.ty)
            .ok_or_else(|| RdrrProblem::UnknownType { tensor: tensor(), ty: entry.ty.clone() })?;
        let dims: Vec<u64> = entry.shape.iter().rev().copied().collect();
        if dims.contains(&0) {
            return Err(crate::gguf::Malformation::ZeroDimension { tensor: tensor(), dims }.into());
        }
        let expected = tensor_byte_size(&entry.name, &dims, ty)?;
        if expected != entry.bytes {
            return Err(RdrrProblem::ByteLength {
                tensor: tensor(),
                ty: ty.name(),
                shape: entry.shape.clone(),
                expected,
                stated: entry.bytes,
            });
        }
        if !entry.offset.is_multiple_of(manifest.alignment) {
            return Err(RdrrProblem::Misaligned {
                tensor: tensor(),
                offset: entry.offset,
                alignment: manifest.alignment,
            });
        }
        let info = TensorInfo {
            name: entry.name.clone(),
            dims,
            ggml_type: ty,
            offset: entry.offset,
            n_bytes: entry.bytes,
        };
        let ranges = shard_ranges(manifest, &info, entry.shard)?;
        for range in &ranges[1..] {
            if let Some(earlier) = continued_into[range.shard].replace(infos.len()) {
                return Err(RdrrProblem::Overlap {
                    first: infos[earlier].name.clone(),
                    second: info.name,
                    shard: manifest.shards[range.shard].file.clone(),
                });
            }
        }
        tensor_pieces.push(ranges);
        infos.push(info);
    }
    check_no_overlap(manifest, &infos, &tensor_pieces)?;
    Ok((infos, tensor_pieces))
}

/// Where `tensor`'s bytes are: from its offset in shard `first` to that shard's end, and on
/// from the start of each following shard until its bytes are all found. A tensor goes on
/// into the next shard only after whole rows, so each range can be uploaded as rows of its own.
fn shard_ranges(
    manifest: &RdrrManifest,
    tensor: &TensorInfo,
    first: usize,
) -> Result<Vec<ShardRange>, RdrrProblem> {
    let shard_file = |index: usize| manifest.shards[index].file.clone();
    let first_shard = manifest.shards.get(first).ok_or_else(|| RdrrProblem::NoSuchShard {
        tensor: tensor.name.clone(),
        shard: first,
        shards: manifest.shards.len(),
    })?;
    // The offset was checked against the alignment only; it may be anything.
    if tensor.offset >= first_shard.size {
        return Err(RdrrProblem::PastShardEnd {
            tensor: tensor.name.clone(),
            shard: first_shard.file.clone(),
            offset: tensor.offset,
            shard_size: first_shard.size,
        });
    }
    let row_bytes = tensor.row_bytes();
    let mut ranges = Vec::new();
    let mut left = tensor.n_bytes;
    let (mut shard, mut start) = (first, tensor.offset);
    loop {
        // Shards are never empty, so every range holds bytes and the walk ends.
        let len = left.min(manifest.shards[shard].size - start);
        ranges.push(ShardRange { shard, start, len });
        left -= len;
        if left == 0 {
            return Ok(ranges);
        }
        if shard + 1 == manifest.shards.len() {
            return Err(RdrrProblem::PastLastShard {
                tensor: tensor.name.clone(),
                shard: shard_file(first),
                offset: tensor.offset,
                bytes: tensor.n_bytes,
                missing: left,
            });
        }
        if !len.is_multiple_of(row_bytes) {
            return Err(RdrrProblem::SplitMidRow {
                tensor: tensor.name.clone(),
                shard: shard_file(shard),
                piece: len,
                row_bytes,
            });
        }
        (shard, start) = (shard + 1, 0);
    }
}

/// Two tensors sharing bytes would alias each other's weights: a crafted manifest, never a writer's.
fn check_no_overlap(
    manifest: &RdrrManifest,
    infos: &[TensorInfo],
    tensor_pieces: &[Vec<ShardRange>],
) -> Result<(), RdrrProblem> {
    let mut ranges: Vec<(&ShardRange, usize)> = tensor_pieces
        .iter()
        .enumerate()
        .flat_map(|(tensor, ranges)| ranges.iter().map(move |range| (range, tensor)))
        .collect();
    ranges.sort_unstable_by_key(|(range, _)| (range.shard, range.start));
    for pair in ranges.windows(2) {
        let ((first, first_tensor), (second, second_tensor)) = (pair[0], pair[1]);
        // Both ends lie within the shard, so the sum does not overflow.
        if first.shard == second.shard && first.start + first.len > second.start {
            return Err(RdrrProblem::Overlap {
                first: infos[first_tensor].name.clone(),
                second: infos[second_tensor].name.clone(),
                shard: manifest.shards[first.shard].file.clone(),
            });
        }
    }
    Ok(())
}

/// Maps a shard after checking its size, and its sha256 where one is given. The hash reads
/// the file rather than the map, so checking a many-gigabyte model leaves its pages in the
/// page cache, not resident in this process, until the weights are uploaded.
fn map_checked(path: &Path, expected_size: u64, expected_sha256: Option<&str>) -> Result<Mmap, RdrrError> {
    let io_error = |source| RdrrError::Io { path: PathBuf::from(path), source };
    let size_error =
        |actual| RdrrError::ShardSize { path: path.to_path_buf(), expected: expected_size, actual };
    let mut file = File::open(path).map_err(io_error)?;
    let actual = file.metadata().map_err(io_error)?.len();
    if actual != expected_size {
        return Err(size_error(actual));
    }
    if let Some(expected_sha256) = expected_sha256 {
        let mut hasher = Sha256::new();
        let hashed = hash_into(&mut hasher, &mut file).map_err(io_error)?;
        if hashed != expected_size {
            return Err(size_error(hashed));
        }
        let sha256 = to_hex(&hasher.finalize());
        if sha256 != expected_sha256 {
            return Err(RdrrError::ShardChecksum {
                path: path.to_path_buf(),
                expected: expected_sha256.to_string(),
                actual: sha256,
            });
        }
    }
    // SAFETY: the map is read-only. Another process rewriting the shard while it is open is
    // outside what we can guard against (as for every mmap reader).
    let map = unsafe { Mmap::map(&file) }.map_err(io_error)?;
    if map.len() as u64 != expected_size {
        return Err(size_error(map.len() as u64));
    }
    Ok(map)
}
