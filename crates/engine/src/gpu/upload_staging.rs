//! Weight uploads through two reused staging buffers. A buffer created mapped stages its whole
//! size in host-visible memory until the next submit (wgpu keeps the staging copy with the
//! queue's pending writes), and a load submits nothing, so it would hold as much host memory as
//! the model has weights (16 GB for Gemma 3 27B); two buffers bound that to 2 × `STAGING_BYTES`
//! and let the CPU fill one while the GPU copies from the other.

use super::{GpuContext, GpuError};

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
    /// Writes `bytes` to the start of `target` (a COPY_DST buffer at least `bytes.len()`
    /// rounded up to 4 bytes long) through the staging buffers, zero-padding the last word.
    pub fn write_staged(&self, target: &wgpu::Buffer, bytes: &[u8]) -> Result<(), GpuError> {
        let mut guard = self.upload_staging.lock().unwrap_or_else(|e| e.into_inner());
        let staging = guard.get_or_insert_with(|| UploadStaging::new(&self.device));
        for (index, piece) in bytes.chunks(STAGING_BYTES as usize).enumerate() {
            let slot = staging.next;
            staging.next = 1 - slot;
            let buffer = &staging.buffers[slot];
            let len = (piece.len() as u64).next_multiple_of(4);
            let slice = buffer.slice(0..len);
            self.wait_for_map(slice, wgpu::MapMode::Write, staging.copying[slot].take())?;
            {
                let mut view = slice.get_mapped_range_mut().map_err(|_| GpuError::MapNotCompleted)?;
                view.slice(..piece.len()).copy_from_slice(piece);
                let padding = len as usize - piece.len();
                if padding > 0 {
                    view.slice(piece.len()..).copy_from_slice(&[0u8; 3][..padding]);
                }
            }
            buffer.unmap();
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("weight upload") });
            encoder.copy_buffer_to_buffer(buffer, 0, target, index as u64 * STAGING_BYTES, len);
            staging.copying[slot] = Some(self.submit("weight upload", encoder));
        }
        Ok(())
    }

    /// Frees the staging buffers once a model is uploaded (the next upload makes new ones).
    pub fn release_upload_staging(&self) {
        *self.upload_staging.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
