//! The wgpu runtime: device choice, shader variants, the pipeline cache, recorded op lists,
//! weights on the GPU and the per-kernel profiler.

mod context;
mod op_list;
mod pipeline_cache;
mod profiler;
pub mod shader;
mod weights;

pub use context::{
    list_adapters, map_and_read, map_and_read_after, AdapterSummary, GpuCapabilities, GpuContext, GpuError,
    GpuInitError, GpuOptions,
};
pub use op_list::{grid, Dispatch, DispatchSwitch, OpList, Workgroups};
pub use pipeline_cache::{PipelineCache, PipelineError};
pub use profiler::{KernelProfiler, KernelTiming};
pub use shader::Define;
pub use weights::{GpuMatrix, MatrixChunk, StackPart, StackedMatrix, WeightUploadError};
