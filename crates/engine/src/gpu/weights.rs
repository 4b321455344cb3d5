use crate::gguf::{GgmlType, TensorBytes};

use super::{GpuContext, GpuError};

#[derive(Debug, thiserror::Error)]
pub enum WeightUploadError {
    #[error("tensor '{name}' ({rows} rows of {row_len} {ty} values, {tensor_bytes} bytes): out of GPU memory allocating a buffer of {buffer_bytes} bytes for it")]
    OutOfMemory {
        name: String,
        rows: u64,
        row_len: u64,
        ty: &'static str,
        tensor_bytes: u64,
        buffer_bytes: u64,
    },
    #[error("tensor '{name}': one row of {row_bytes} bytes is larger than the GPU's largest storage binding ({max_binding} bytes)")]
    RowTooLarge { name: String, row_bytes: u64, max_binding: u64 },
    #[error("tensor '{name}': {rows} rows of {row_len} {ty} values do not fit the GPU's 32-bit indexing")]
    TooManyElements { name: String, rows: u64, row_len: u64, ty: &'static str },
    #[error("tensor '{name}': data is {actual} bytes, expected {expected} for {rows} rows of {row_len} {ty} values")]
    SizeMismatch { name: String, actual: u64, expected: u64, rows: u64, row_len: u64, ty: &'static str },
    #[error("tensor '{name}': row length {row_len} is not a multiple of the {ty} block of {block} values")]
    PartialBlock { name: String, row_len: u64, ty: &'static str, block: usize },
    #[error("stacked matrix '{name}': {bytes} bytes do not fit one storage binding")]
    StackTooLarge { name: String, bytes: u64 },
    #[error("tensor '{name}': copying it to the GPU failed: {source}")]
    Transfer {
        name: String,
        #[source]
        source: GpuError,
    },
}

/// Rows `first_row .. first_row + rows` of a matrix, in one buffer that fits one binding.
pub struct MatrixChunk {
    pub buffer: wgpu::Buffer,
    pub first_row: u32,
    pub rows: u32,
}

/// A weight matrix on the GPU in its GGUF block layout: kernels dequantize in registers.
/// A matrix larger than the device's largest storage binding is split by rows into chunks.
pub struct GpuMatrix {
    pub name: String,
    pub ggml_type: GgmlType,
    /// Values per row: the reduction dimension of a matrix-vector product.
    pub row_len: u32,
    pub rows: u32,
    pub row_bytes: u64,
    pub chunks: Vec<MatrixChunk>,
}

impl GpuMatrix {
    pub fn upload(
        ctx: &GpuContext,
        name: &str,
        ggml_type: GgmlType,
        row_len: u64,
        rows: u64,
        data: &[u8],
    ) -> Result<GpuMatrix, WeightUploadError> {
        Self::upload_with_chunk_limit(ctx, name, ggml_type, row_len, rows, data, u64::MAX)
    }

    /// As `upload`, with chunks of at most `max_chunk_bytes` of weights (and never above the
    /// device's binding limit): lets tests split small matrices to exercise the chunked paths.
    pub fn upload_with_chunk_limit(
        ctx: &GpuContext,
        name: &str,
        ggml_type: GgmlType,
        row_len: u64,
        rows: u64,
        data: &[u8],
        max_chunk_bytes: u64,
    ) -> Result<GpuMatrix, WeightUploadError> {
        let data = TensorBytes::new(vec![data]);
        Self::upload_pieces(ctx, name, ggml_type, row_len, rows, &data, max_chunk_bytes)
    }

    /// As `upload_with_chunk_limit`, from bytes in pieces (an RDRR tensor spanning shards, the
    /// parts of a stack): they stream through the staging buffers where they lie, never joined
    /// in a host copy first.
    pub fn upload_pieces(
        ctx: &GpuContext,
        name: &str,
        ggml_type: GgmlType,
        row_len: u64,
        rows: u64,
        data: &TensorBytes,
        max_chunk_bytes: u64,
    ) -> Result<GpuMatrix, WeightUploadError> {
        let ty = ggml_type.name();
        if !row_len.is_multiple_of(ggml_type.block_len() as u64) {
            return Err(WeightUploadError::PartialBlock {
                name: name.into(),
                row_len,
                ty,
                block: ggml_type.block_len(),
            });
        }
        let row_bytes = row_len / ggml_type.block_len() as u64 * ggml_type.block_bytes() as u64;
        if row_len > u64::from(u32::MAX)
            || rows > u64::from(u32::MAX)
            || row_len.saturating_mul(rows) > u64::from(u32::MAX)
        {
            return Err(WeightUploadError::TooManyElements { name: name.into(), rows, row_len, ty });
        }
        let expected = row_bytes * rows;
        if data.len() != expected {
            return Err(WeightUploadError::SizeMismatch {
                name: name.into(),
                actual: data.len(),
                expected,
                rows,
                row_len,
                ty,
            });
        }
        // Chunk byte sizes stay multiples of 16 bytes since kernels read 16-byte vectors.
        let max_binding = ctx.caps.max_storage_binding.min(ctx.caps.max_buffer_size) & !15;
        let rows_per_chunk = max_binding.saturating_sub(SPARE_BYTES).min(max_chunk_bytes) / row_bytes;
        if rows_per_chunk == 0 {
            return Err(WeightUploadError::RowTooLarge { name: name.into(), row_bytes, max_binding });
        }
        let mut chunks = Vec::new();
        let mut first_row = 0u64;
        while first_row < rows {
            let chunk_rows = rows_per_chunk.min(rows - first_row);
            let bytes = data
                .slice(first_row * row_bytes..(first_row + chunk_rows) * row_bytes)
                .expect("chunk rows lie within the checked size");
            let buffer = upload_padded(ctx, name, &bytes).map_err(|failure| match failure {
                UploadFailure::OutOfMemory { buffer_bytes } => WeightUploadError::OutOfMemory {
                    name: name.into(),
                    rows,
                    row_len,
                    ty,
                    tensor_bytes: expected,
                    buffer_bytes,
                },
                UploadFailure::Transfer(source) => WeightUploadError::Transfer { name: name.into(), source },
            })?;
            chunks.push(MatrixChunk { buffer, first_row: first_row as u32, rows: chunk_rows as u32 });
            first_row += chunk_rows;
        }
        Ok(GpuMatrix {
            name: name.into(),
            ggml_type,
            row_len: row_len as u32,
            rows: rows as u32,
            row_bytes,
            chunks,
        })
    }

    pub fn size_bytes(&self) -> u64 {
        self.row_bytes * u64::from(self.rows)
    }
}

/// One matrix of a stack: its name and how many rows it adds.
pub struct StackPart {
    pub name: String,
    pub rows: u32,
}

/// Matrices applied to the same input, of one type and row length, stacked by rows into one
/// binding (q, k, v; gate, up), so one decode dispatch reads them all.
pub struct StackedMatrix {
    pub matrix: GpuMatrix,
    pub parts: Vec<StackPart>,
}

impl StackedMatrix {
    /// Stacks `parts` (name, rows, data) of `ggml_type` rows of `row_len` values. Only ever
    /// one chunk: callers stack only what `fits_one_binding` accepts.
    pub fn upload(
        ctx: &GpuContext,
        name: &str,
        ggml_type: GgmlType,
        row_len: u64,
        parts: &[(&str, u64, &[u8])],
    ) -> Result<StackedMatrix, WeightUploadError> {
        let parts: Vec<_> =
            parts.iter().map(|&(name, rows, data)| (name, rows, TensorBytes::new(vec![data]))).collect();
        Self::upload_pieces(ctx, name, ggml_type, row_len, &parts)
    }

    /// As `upload`, each part's bytes in pieces.
    pub fn upload_pieces(
        ctx: &GpuContext,
        name: &str,
        ggml_type: GgmlType,
        row_len: u64,
        parts: &[(&str, u64, TensorBytes)],
    ) -> Result<StackedMatrix, WeightUploadError> {
        let rows = parts.iter().map(|(_, rows, _)| rows).sum();
        let data =
            TensorBytes::new(parts.iter().flat_map(|(_, _, data)| data.pieces().iter().copied()).collect());
        let matrix = GpuMatrix::upload_pieces(ctx, name, ggml_type, row_len, rows, &data, u64::MAX)?;
        if matrix.chunks.len() != 1 {
            return Err(WeightUploadError::StackTooLarge { name: name.into(), bytes: data.len() });
        }
        let parts = parts
            .iter()
            .map(|(name, rows, _)| StackPart { name: (*name).into(), rows: *rows as u32 })
            .collect();
        Ok(StackedMatrix { matrix, parts })
    }

    /// Whether `bytes` of weights fit one storage binding of this device.
    pub fn fits_one_binding(ctx: &GpuContext, bytes: u64) -> bool {
        padded_size(bytes) <= ctx.caps.max_storage_binding.min(ctx.caps.max_buffer_size)
    }

    /// The rows of part `index` within the stacked matrix.
    pub fn part_rows(&self, index: usize) -> std::ops::Range<u32> {
        let first: u32 = self.parts[..index].iter().map(|part| part.rows).sum();
        first..first + self.parts[index].rows
    }
}

/// Why one buffer of a matrix could not be uploaded (its caller names the matrix).
enum UploadFailure {
    OutOfMemory { buffer_bytes: u64 },
    Transfer(GpuError),
}

/// Bytes after a matrix's last block: the decode products read 2-aligned 16-byte pieces of
/// 210-byte blocks from two aligned 16-byte vectors, the second of which may lie past the end.
const SPARE_BYTES: u64 = 16;

/// The buffer size of `bytes` of weights: whole 16-byte vectors and a spare one.
fn padded_size(bytes: u64) -> u64 {
    bytes.next_multiple_of(16) + SPARE_BYTES
}

fn upload_padded(ctx: &GpuContext, label: &str, bytes: &TensorBytes) -> Result<wgpu::Buffer, UploadFailure> {
    let size = padded_size(bytes.len());
    let out_of_memory = ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let out_of_memory = pollster::block_on(out_of_memory.pop()).is_some();
    // An injected fault answers as this scope would on a full GPU.
    #[cfg(feature = "fault-injection")]
    let out_of_memory = out_of_memory || ctx.allocation_fails_now();
    if out_of_memory {
        return Err(UploadFailure::OutOfMemory { buffer_bytes: size });
    }
    ctx.write_staged(&buffer, bytes).map_err(UploadFailure::Transfer)?;
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        gpu::{Element, GpuOptions, GpuTensor, OpList},
        kernels::matmul::record_matvec,
    };

    #[test]
    fn a_matrix_in_pieces_goes_up_as_the_same_chunks_and_rows_as_whole() {
        const ROW_LEN: u32 = 32;
        const ROWS: u32 = 40;
        let ctx = GpuContext::new(&GpuOptions::default()).expect("a wgpu adapter");
        let weights: Vec<f32> = (0..ROWS * ROW_LEN).map(|i| ((i * 7 % 19) as f32 - 9.0) / 8.0).collect();
        let bytes: &[u8] = bytemuck::cast_slice(&weights);
        let row_bytes = u64::from(ROW_LEN) * 4;
        // Pieces that end inside rows and inside chunks of at most 8 rows.
        let (first, rest) = bytes.split_at(13 * row_bytes as usize + 4);
        let (second, third) = rest.split_at(20 * row_bytes as usize - 12);
        let upload = |data: &TensorBytes| {
            GpuMatrix::upload_pieces(
                &ctx,
                "w",
                GgmlType::F32,
                ROW_LEN.into(),
                ROWS.into(),
                data,
                8 * row_bytes,
            )
            .unwrap()
        };
        let in_pieces = upload(&TensorBytes::new(vec![first, second, third]));
        let whole = upload(&TensorBytes::new(vec![bytes]));
        let chunks = |w: &GpuMatrix| w.chunks.iter().map(|c| (c.first_row, c.rows)).collect::<Vec<_>>();
        assert_eq!(chunks(&in_pieces), [(0, 8), (8, 8), (16, 8), (24, 8), (32, 8)]);
        assert_eq!(chunks(&in_pieces), chunks(&whole));

        let x: Vec<f32> = (0..ROW_LEN).map(|i| i as f32 / 16.0 - 1.0).collect();
        let input = GpuTensor::from_f32(&ctx, "x", ROW_LEN, &x);
        let products = [&in_pieces, &whole].map(|w| {
            let output = GpuTensor::zeroed(&ctx, "y", 1, ROWS, Element::F32);
            let mut ops = OpList::new();
            record_matvec(&ctx, &mut ops, "matvec", w, &input, &output).unwrap();
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            ops.encode(&mut encoder, 1, None);
            ctx.queue.submit([encoder.finish()]);
            ctx.read_f32(output.buffer(), ROWS as usize).unwrap()
        });
        assert_eq!(products[0], products[1]);
        let expected: Vec<f32> = weights
            .chunks(ROW_LEN as usize)
            .map(|row| row.iter().zip(&x).map(|(w, x)| w * x).sum())
            .collect();
        for (got, want) in products[0].iter().zip(&expected) {
            assert!((got - want).abs() <= 1e-3, "{got} against {want}");
        }

        // Pieces that add up to another length are refused, naming the matrix.
        let short = TensorBytes::new(vec![first, second]);
        let error =
            GpuMatrix::upload_pieces(&ctx, "w", GgmlType::F32, ROW_LEN.into(), ROWS.into(), &short, u64::MAX)
                .err()
                .expect("refused");
        assert!(matches!(&error, WeightUploadError::SizeMismatch { name, .. } if name == "w"), "{error}");
    }
}
