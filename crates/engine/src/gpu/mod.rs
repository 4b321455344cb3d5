//! The wgpu runtime: device choice, shader variants, the pipeline cache, recorded op lists,
//! weights on the GPU, the per-kernel profiler and memory tiers.

mod bandwidth;
mod context;
#[cfg(feature = "fault-injection")]
mod fault_injection;
mod memory;
mod op_list;
mod pipeline_cache;
mod profiler;
pub mod shader;
mod tensor;
mod upload_staging;
mod weights;

pub use bandwidth::BandwidthError;
pub use context::{
    list_adapters, AdapterSummary, GpuCapabilities, GpuContext, GpuError, GpuInitError, GpuOptions,
};
#[cfg(feature = "fault-injection")]
pub use fault_injection::GpuFault;
pub use memory::{AdapterKind, GpuMemory, MemoryKind, MemorySource, MemoryTier};
pub use op_list::{grid, Dispatch, DispatchSwitch, OpList, WeightBytes, Workgroups};
pub use pipeline_cache::{KernelPipeline, KernelVariant, PipelineCache, PipelineError};
pub use profiler::{KernelProfiler, KernelTiming, WeightTraffic};
pub use shader::Define;
pub use tensor::{Element, GpuTensor, StepBuffer};
pub use weights::{GpuMatrix, MatrixChunk, StackPart, StackedMatrix, WeightUploadError};
