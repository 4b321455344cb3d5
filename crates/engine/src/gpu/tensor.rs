//! Activation tensors on the GPU: a buffer with the shape and element type its kernels read it
//! as. Kernel recorders take these rather than raw buffers and loose sizes, so a size travels
//! with its buffer and is checked once, where the buffer meets a kernel.

use super::GpuContext;

/// What a tensor's elements are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    F32,
    /// Token ids.
    U32,
}

impl Element {
    pub const fn bytes(self) -> u64 {
        4
    }

    pub const fn name(self) -> &'static str {
        match self {
            Element::F32 => "f32",
            Element::U32 => "u32",
        }
    }
}

/// `rows` rows of `width` elements, row-major. For activations a row is a token: `rows` is the
/// most tokens a step holds. Vectors (norm weights, biases, a decode step's single row) have one.
#[derive(Debug)]
pub struct GpuTensor {
    label: String,
    buffer: wgpu::Buffer,
    rows: u32,
    width: u32,
    element: Element,
}

impl GpuTensor {
    /// A zero-filled tensor.
    pub fn zeroed(ctx: &GpuContext, label: &str, rows: u32, width: u32, element: Element) -> GpuTensor {
        let bytes = u64::from(rows) * u64::from(width) * element.bytes();
        GpuTensor { label: label.to_string(), buffer: ctx.zeroed_storage(label, bytes), rows, width, element }
    }

    /// An f32 tensor holding `values`, `width` to a row.
    ///
    /// # Panics
    /// When `values` is not a whole number of rows: a caller's bug, not input.
    pub fn from_f32(ctx: &GpuContext, label: &str, width: u32, values: &[f32]) -> GpuTensor {
        Self::from_bytes(ctx, label, width, Element::F32, bytemuck::cast_slice(values))
    }

    /// A u32 tensor holding `values`, `width` to a row.
    ///
    /// # Panics
    /// As [`GpuTensor::from_f32`].
    pub fn from_u32(ctx: &GpuContext, label: &str, width: u32, values: &[u32]) -> GpuTensor {
        Self::from_bytes(ctx, label, width, Element::U32, bytemuck::cast_slice(values))
    }

    /// A tensor holding `bytes` (little-endian `element`s, any alignment), `width` to a row.
    ///
    /// # Panics
    /// As [`GpuTensor::from_f32`].
    pub fn from_bytes(
        ctx: &GpuContext,
        label: &str,
        width: u32,
        element: Element,
        bytes: &[u8],
    ) -> GpuTensor {
        let count = bytes.len() as u64 / element.bytes();
        assert!(
            width > 0 && count.is_multiple_of(u64::from(width)),
            "{label}: {count} values in rows of {width}"
        );
        let rows = u32::try_from(count / u64::from(width)).expect("rows fit in u32");
        GpuTensor { label: label.to_string(), buffer: ctx.storage_buffer(label, bytes), rows, width, element }
    }

    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    pub fn rows(&self) -> u32 {
        self.rows
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn element(&self) -> Element {
        self.element
    }

    /// Elements in the whole tensor.
    pub fn len(&self) -> u64 {
        u64::from(self.rows) * u64::from(self.width)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn size_bytes(&self) -> u64 {
        self.buffer.size()
    }

    /// One line for errors: `'normed' [128 × 576 f32]`.
    pub fn describe(&self) -> String {
        format!("'{}' [{} × {} {}]", self.label, self.rows, self.width, self.element.name())
    }
}

/// The `Step` struct of `step.wgsl` on the GPU: how many tokens the step runs and where in
/// the sequence they start. Written before each submit; read by every per-token kernel.
#[derive(Debug)]
pub struct StepBuffer {
    buffer: wgpu::Buffer,
}

impl StepBuffer {
    pub const BYTES: u64 = 16;

    pub fn new(ctx: &GpuContext) -> StepBuffer {
        StepBuffer { buffer: ctx.zeroed_storage("step", Self::BYTES) }
    }

    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Starts a step of `n_tokens` tokens at position `pos`, with the decode loop's counters
    /// cleared.
    pub fn write(&self, queue: &wgpu::Queue, pos: u32, n_tokens: u32) {
        queue.write_buffer(&self.buffer, 0, bytemuck::cast_slice(&[pos, n_tokens, 0, 0]));
    }
}
