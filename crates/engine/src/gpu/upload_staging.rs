//! Weight uploads through two reused staging buffers. A buffer created mapped stages its whole
//! size in host-visible memory until the next submit (wgpu keeps the staging copy with the
//! queue's pending writes), and a load submits nothing, so it would hold as much host memory as
//! the model has weights (16 GB for Gemma 3 27B); two buffers bound that to 2 × `STAGING_BYTES`
//! and let the CPU fill one while the GPU copies from the other.

use super::{GpuContext, GpuError};
use crate::gguf::TensorBytes;

/// Bytes per staging buffer.
const STAGING_BYTES: u64 = 32 << 20;

pub(crate) struct UploadStaging {
    buffers: [wgpu::Buffer; 2],
    /// The submission that copies out of each buffer, until it has been mapped again.
    copying: [Option<wgpu::SubmissionIndex>; 2],
    next: usize,
}

impl UploadStaging {
    fn new(device: &wgpu::Device) -> UploadStaging {
        let buffer = || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("weight upload staging"),
                size: STAGING_BYTES,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        UploadStaging { buffers: [buffer(), buffer()], copying: [None, None], next: 0 }
    }
}

impl GpuContext {
    /// Writes `bytes` (consecutive pieces) to the start of `target` (a COPY_DST buffer at least
    /// their length rounded up to 4 bytes long) through the staging buffers, zero-padding the
    /// last word.
    pub fn write_staged(&self, target: &wgpu::Buffer, bytes: &TensorBytes) -> Result<(), GpuError> {
        let mut guard = self.upload_staging.lock().unwrap_or_else(|e| e.into_inner());
        let staging = guard.get_or_insert_with(|| UploadStaging::new(&self.device));
        let total = bytes.len();
        for start in (0..total).step_by(STAGING_BYTES as usize) {
            let end = (start + STAGING_BYTES).min(total);
            let window = bytes.slice(start..end).expect("windows lie within the bytes");
            let slot = staging.next;
            staging.next = 1 - slot;
            let buffer = &staging.buffers[slot];
            let len = (end - start).next_multiple_of(4);
            let slice = buffer.slice(0..len);
            self.wait_for_map(slice, wgpu::MapMode::Write, staging.copying[slot].take())?;
            {
                let mut view = slice.get_mapped_range_mut().map_err(|_| GpuError::MapNotCompleted)?;
                let mut filled = 0;
                for piece in window.pieces() {
                    view.slice(filled..filled + piece.len()).copy_from_slice(piece);
                    filled += piece.len();
                }
                let padding = len as usize - filled;
                if padding > 0 {
                    view.slice(filled..).copy_from_slice(&[0u8; 3][..padding]);
                }
            }
            buffer.unmap();
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("weight upload") });
            encoder.copy_buffer_to_buffer(buffer, 0, target, start, len);
            staging.copying[slot] = Some(self.submit("weight upload", encoder));
        }
        Ok(())
    }

    /// Frees the staging buffers once a model is uploaded (the next upload makes new ones).
    pub fn release_upload_staging(&self) {
        *self.upload_staging.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
