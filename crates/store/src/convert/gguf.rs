//! GGUF → RDRR: the same tensors in the same types, their bytes copied from the file in
//! fixed-size reads (never mapped whole), so memory stays flat whatever the model's size.

use std::{
    fs::File,
    io::{self, Read, Seek, SeekFrom, Write},
    path::Path,
};

use doppler_engine::{
    gguf::GgufFile,
    rdrr::{RdrrWriter, WrittenRdrr},
};

use super::{ConvertError, ConvertProgress};

const COPY_CHUNK: usize = 4 << 20;

/// Writes the GGUF file at `src` as an RDRR model into `out_dir`, shards of at most
/// `shard_limit` bytes. Metadata (configuration, tokenizer, chat template) and every tensor
/// keep their keys, types and bytes.
pub fn gguf_to_rdrr(
    src: &Path,
    out_dir: &Path,
    shard_limit: u64,
    progress: &mut dyn FnMut(ConvertProgress),
) -> Result<WrittenRdrr, ConvertError> {
    // The header is parsed from a map; the tensor data is read with plain reads below, so
    // the pages of a many-gigabyte file are never resident in this process.
    let gguf = GgufFile::open(src)?;
    let mut file = File::open(src).map_err(ConvertError::io(src))?;
    let total: u64 = gguf.tensors().iter().map(|t| t.n_bytes).sum();
    let mut done = 0u64;
    let mut writer = RdrrWriter::create(out_dir, shard_limit)?;
    let mut buffer = vec![0u8; COPY_CHUNK];
    for info in gguf.tensors() {
        writer.add_tensor(&info.name, info.ggml_type, &info.dims, &mut |out| {
            copy_range(&mut file, info.offset, info.n_bytes, &mut buffer, out)
        })?;
        done += info.n_bytes;
        progress(ConvertProgress { tensor: info.name.clone(), done_bytes: done, total_bytes: total });
    }
    Ok(writer.finish(gguf.metadata().iter())?)
}

fn copy_range(
    file: &mut File,
    offset: u64,
    len: u64,
    buffer: &mut [u8],
    out: &mut dyn Write,
) -> io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    let mut left = len;
    while left > 0 {
        let chunk = left.min(buffer.len() as u64) as usize;
        file.read_exact(&mut buffer[..chunk])?;
        out.write_all(&buffer[..chunk])?;
        left -= chunk as u64;
    }
    Ok(())
}
