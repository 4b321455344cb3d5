use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde::Serialize;
use wgpu::util::DeviceExt;

use super::{
    memory::GpuMemory,
    pipeline_cache::{KernelPipeline, PipelineCache},
    upload_staging::UploadStaging,
};

/// Why no usable GPU device could be opened.
#[derive(Debug, thiserror::Error)]
pub enum GpuInitError {
    #[error("no GPU adapter found (is a Vulkan, Metal or DX12 driver installed? on Linux without a GPU install mesa-vulkan-drivers for lavapipe)")]
    NoAdapter,
    #[error("no GPU adapter matches DOPPLER_ADAPTER={filter:?}; available: {available}")]
    NoMatchingAdapter { filter: String, available: String },
    #[error("could not open GPU device on adapter '{adapter}': {source}")]
    RequestDevice {
        adapter: String,
        #[source]
        source: wgpu::RequestDeviceError,
    },
}

/// An error reported by wgpu while running GPU work.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("GPU device lost or stalled while waiting: {0}")]
    Poll(#[from] wgpu::PollError),
    #[error("reading GPU buffer back failed: {0}")]
    Map(#[from] wgpu::BufferAsyncError),
    #[error("GPU validation error in {operation}: {message}")]
    Validation { operation: String, message: String },
    #[error("GPU out of memory while {operation}: {message}")]
    OutOfMemory { operation: String, message: String },
    #[error("the GPU device was lost ({0}); it is opened again on the next load")]
    DeviceLost(String),
    #[error("GPU error outside any checked operation: {0}")]
    Uncaught(String),
    #[error("a GPU buffer could not be mapped for reading back (the device stopped answering?)")]
    MapNotCompleted,
}

/// How long a wait for the GPU may take before it counts as hung: generous, since a prefill
/// step of a large model on a CPU adapter (lavapipe) takes many seconds.
const GPU_WAIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How often a readback whose submission finished looks again for its map callback.
const MAP_CALLBACK_POLL_INTERVAL: Duration = Duration::from_millis(2);

/// What wgpu reports outside error scopes: a lost device, and errors no scope caught (wgpu's
/// default handler would panic on those); and what a submit's own scope caught, reported at
/// the next wait on the device.
#[derive(Debug, Default)]
struct DeviceHealth {
    lost: Mutex<Option<String>>,
    failed: Mutex<Option<GpuError>>,
}

impl DeviceHealth {
    fn watch(device: &wgpu::Device) -> Arc<DeviceHealth> {
        let health = Arc::new(DeviceHealth::default());
        let errors = health.clone();
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            tracing::error!(%error, "uncaught GPU error");
            errors.report(GpuError::Uncaught(error.to_string()));
        }));
        let lost = health.clone();
        device.set_device_lost_callback(move |reason, message| {
            tracing::error!(?reason, %message, "GPU device lost");
            *lost.lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{reason:?}: {message}"));
        });
        health
    }

    /// Keeps the first error until `check_health` reports it.
    fn report(&self, error: GpuError) {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(error);
    }
}

/// Which optional adapter features the engine may use, and the limits it must respect.
#[derive(Debug, Clone, Serialize)]
pub struct GpuCapabilities {
    pub shader_f16: bool,
    pub subgroups: bool,
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub timestamps: bool,
    pub timestamps_inside_passes: bool,
    /// 16 × 16 × 16 cooperative matrix products (tensor cores) with f16 inputs and f32
    /// accumulators, in subgroups of exactly 32 threads (the tiled matmul's layout).
    pub cooperative_matrix: bool,
    pub max_storage_binding: u64,
    pub max_buffer_size: u64,
    pub max_workgroups_per_dimension: u32,
    pub max_workgroup_storage_bytes: u32,
    pub max_workgroup_invocations: u32,
    pub max_storage_buffers_per_stage: u32,
    /// The adapter is the CPU (lavapipe, WARP): the kernels that spread work over thousands of
    /// GPU threads trade it for fewer, larger workgroups there. False on a CPU adapter too where
    /// `GpuOptions::gpu_shapes_on_cpu` asks for the GPU's shapes.
    pub cpu_adapter: bool,
}

/// One adapter as `doppler devices` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
    pub features: Vec<String>,
    pub capabilities: GpuCapabilities,
    pub memory: GpuMemory,
}

/// How to choose and configure the GPU device.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Case-insensitive substring of the adapter name; `DOPPLER_ADAPTER` when unset.
    pub adapter_filter: Option<String>,
    /// Ignore shader-f16 even where the adapter has it, to exercise the f32 fallback.
    pub disable_f16: bool,
    /// Ignore subgroup operations even where the adapter has them, to exercise the fallback.
    pub disable_subgroups: bool,
    /// Ignore cooperative matrices even where the adapter has them, to exercise the fallback.
    pub disable_cooperative_matrix: bool,
    /// Ask for timestamp queries (per-kernel profiling) when the adapter has them.
    pub want_timestamps: bool,
    /// Shape the kernels as for a GPU even on a CPU adapter, to test those shapes there.
    pub gpu_shapes_on_cpu: bool,
}

impl GpuOptions {
    /// Defaults overridden by `DOPPLER_ADAPTER`, `DOPPLER_DISABLE_F16`, `DOPPLER_DISABLE_SUBGROUPS`
    /// and `DOPPLER_DISABLE_COOPERATIVE_MATRIX`.
    pub fn from_env() -> Self {
        let flag = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
        Self {
            adapter_filter: std::env::var("DOPPLER_ADAPTER").ok().filter(|s| !s.is_empty()),
            disable_f16: flag("DOPPLER_DISABLE_F16"),
            disable_subgroups: flag("DOPPLER_DISABLE_SUBGROUPS"),
            disable_cooperative_matrix: flag("DOPPLER_DISABLE_COOPERATIVE_MATRIX"),
            want_timestamps: true,
            gpu_shapes_on_cpu: false,
        }
    }
}

/// The wgpu device the engine runs on, with its capabilities and compiled pipelines.
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter_info: wgpu::AdapterInfo,
    pub caps: GpuCapabilities,
    pub pipelines: PipelineCache,
    health: Arc<DeviceHealth>,
    /// Staging buffers of weight uploads, while a model loads.
    pub(super) upload_staging: Mutex<Option<UploadStaging>>,
    #[cfg(feature = "fault-injection")]
    pub(super) faults: super::fault_injection::ArmedFaults,
}

/// Vulkan, Metal and DX12 only (`WGPU_BACKEND` overrides): the GL backend lacks the compute
/// features the kernels use, and probing it on a headless Linux box only prints noise.
fn new_instance() -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = wgpu::Backends::PRIMARY;
    wgpu::Instance::new(descriptor.with_env())
}

fn device_type_rank(device_type: wgpu::DeviceType) -> u8 {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// Whether the adapter multiplies 16 × 16 f16 tiles into f32 accumulators per subgroup.
fn has_f16_cooperative_matrix(adapter: &wgpu::Adapter) -> bool {
    adapter.features().contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        && adapter.cooperative_matrix_properties().iter().any(|p| {
            (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                && p.ab_type == wgpu::CooperativeScalarType::F16
                && p.cr_type == wgpu::CooperativeScalarType::F32
        })
}

fn capabilities(adapter: &wgpu::Adapter, options: &GpuOptions) -> GpuCapabilities {
    let features = adapter.features();
    let limits = adapter.limits();
    let info = adapter.get_info();
    let shader_f16 = features.contains(wgpu::Features::SHADER_F16) && !options.disable_f16;
    let subgroups = features.contains(wgpu::Features::SUBGROUP) && !options.disable_subgroups;
    GpuCapabilities {
        shader_f16,
        subgroups,
        subgroup_min_size: info.subgroup_min_size,
        subgroup_max_size: info.subgroup_max_size,
        timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY) && options.want_timestamps,
        timestamps_inside_passes: features.contains(
            wgpu::Features::TIMESTAMP_QUERY
                | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
                | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES,
        ) && options.want_timestamps,
        cooperative_matrix: shader_f16
            && subgroups
            && (info.subgroup_min_size, info.subgroup_max_size) == (32, 32)
            && !options.disable_cooperative_matrix
            && has_f16_cooperative_matrix(adapter),
        max_storage_binding: limits.max_storage_buffer_binding_size,
        max_buffer_size: limits.max_buffer_size,
        max_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
        max_workgroup_storage_bytes: limits.max_compute_workgroup_storage_size,
        cpu_adapter: info.device_type == wgpu::DeviceType::Cpu && !options.gpu_shapes_on_cpu,
        max_workgroup_invocations: limits.max_compute_invocations_per_workgroup,
        max_storage_buffers_per_stage: limits.max_storage_buffers_per_shader_stage,
    }
}

fn summarize(adapter: &wgpu::Adapter) -> AdapterSummary {
    let info = adapter.get_info();
    AdapterSummary {
        name: info.name.clone(),
        backend: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        driver: info.driver.clone(),
        driver_info: info.driver_info.clone(),
        features: adapter.features().iter_names().map(|(name, _)| name.to_string()).collect(),
        capabilities: capabilities(adapter, &GpuOptions { want_timestamps: true, ..Default::default() }),
        memory: GpuMemory::of_adapter(adapter),
    }
}

/// Every adapter wgpu can see, best first.
pub fn list_adapters() -> Vec<AdapterSummary> {
    sorted_adapters(&new_instance()).iter().map(summarize).collect()
}

fn sorted_adapters(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    adapters.sort_by_key(|a| {
        let info = a.get_info();
        // Vulkan/Metal/DX12 before GL: the engine needs real compute.
        let backend_rank = u8::from(info.backend == wgpu::Backend::Gl);
        (backend_rank, device_type_rank(info.device_type))
    });
    adapters
}

impl GpuContext {
    /// Opens the best adapter (a discrete GPU if there is one), or the one the filter names.
    pub fn new(options: &GpuOptions) -> Result<Arc<GpuContext>, GpuInitError> {
        let instance = new_instance();
        let adapters = sorted_adapters(&instance);
        if adapters.is_empty() {
            return Err(GpuInitError::NoAdapter);
        }
        let adapter = match &options.adapter_filter {
            Some(filter) => {
                let wanted = filter.to_lowercase();
                adapters.iter().find(|a| a.get_info().name.to_lowercase().contains(&wanted)).ok_or_else(
                    || GpuInitError::NoMatchingAdapter {
                        filter: filter.clone(),
                        available: adapters.iter().map(|a| a.get_info().name).collect::<Vec<_>>().join(", "),
                    },
                )?
            }
            None => &adapters[0],
        };
        let caps = capabilities(adapter, options);
        let mut features = wgpu::Features::empty();
        if caps.shader_f16 {
            features |= wgpu::Features::SHADER_F16;
        }
        if caps.subgroups {
            features |= wgpu::Features::SUBGROUP;
        }
        if caps.timestamps {
            features |= wgpu::Features::TIMESTAMP_QUERY;
        }
        if caps.timestamps_inside_passes {
            features |= wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
                | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        }
        let experimental_features = if caps.cooperative_matrix {
            features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
            // SAFETY: wgpu marks cooperative matrices experimental (its validation of them is
            // incomplete). The one kernel that uses them (matmul_tiled.wgsl) is tested against
            // the CPU reference on adapters that have them, and only 16 × 16 × 16 f16/f32
            // products the adapter reports are used.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let adapter_info = adapter.get_info();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("doppler"),
            required_features: features,
            required_limits: adapter.limits(),
            experimental_features,
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|source| GpuInitError::RequestDevice { adapter: adapter_info.name.clone(), source })?;
        tracing::info!(adapter = %adapter_info.name, backend = ?adapter_info.backend, ?caps, "GPU device opened");
        let pipelines = PipelineCache::new(caps.clone());
        let health = DeviceHealth::watch(&device);
        Ok(Arc::new(GpuContext {
            device,
            queue,
            adapter_info,
            caps,
            pipelines,
            health,
            upload_staging: Mutex::new(None),
            #[cfg(feature = "fault-injection")]
            faults: Default::default(),
        }))
    }

    /// An error if the device was lost, a submit was refused or an error escaped every scope
    /// since the last check (which it reports once): work on the device after either cannot
    /// be trusted.
    pub fn check_health(&self) -> Result<(), GpuError> {
        if let Some(reason) = self.health.lost.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Err(GpuError::DeviceLost(reason));
        }
        match self.health.failed.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Finishes `encoder` and submits it inside a validation scope: commands wgpu refuses
    /// (none of which then run) fail the next wait on the device as a validation error of
    /// `operation`, so whoever waits for the results hears why they never came.
    pub fn submit(&self, operation: &str, encoder: wgpu::CommandEncoder) -> wgpu::SubmissionIndex {
        #[cfg(feature = "fault-injection")]
        let encoder = {
            let mut encoder = encoder;
            self.sabotage_if_due(&mut encoder);
            encoder
        };
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let submission = self.queue.submit([encoder.finish()]);
        if let Some(error) = pollster::block_on(validation.pop()) {
            tracing::error!(%error, operation, "GPU submit refused");
            self.health.report(GpuError::Validation {
                operation: operation.to_string(),
                message: error.to_string(),
            });
        }
        submission
    }

    /// Whether the device was lost: nothing on it works any more.
    pub fn is_lost(&self) -> bool {
        self.health.lost.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// As `is_lost`, after polling the device so that a loss not yet reported (while idle)
    /// is heard now.
    pub fn probe_lost(&self) -> bool {
        // A poll on a lost device fails too; the callback has spoken by then either way.
        let _ = self.device.poll(wgpu::PollType::Poll);
        self.is_lost()
    }

    /// Maps a MAP_READ buffer whose copy has been submitted, waits for the GPU and returns its bytes.
    pub fn map_and_read(&self, staging: &wgpu::Buffer, size: u64) -> Result<Vec<u8>, GpuError> {
        self.map_and_read_after(staging, size, None)
    }

    /// As `map_and_read`, waiting only for `submission` (and those before it) rather than for
    /// everything queued: work submitted after it keeps the GPU busy while the CPU reads. A
    /// wait longer than `GPU_WAIT_TIMEOUT` or a lost device is an error, never a hang.
    pub fn map_and_read_after(
        &self,
        staging: &wgpu::Buffer,
        size: u64,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<Vec<u8>, GpuError> {
        let slice = staging.slice(0..size);
        self.wait_for_map(slice, wgpu::MapMode::Read, submission)?;
        let bytes = slice.get_mapped_range().map_err(|_| GpuError::MapNotCompleted)?.to_vec();
        staging.unmap();
        Ok(bytes)
    }

    /// Maps `slice` and waits until the map is done: after `submission` (and those before it),
    /// or everything queued. A wait longer than `GPU_WAIT_TIMEOUT` or a lost device is an error.
    pub(super) fn wait_for_map(
        &self,
        slice: wgpu::BufferSlice,
        mode: wgpu::MapMode,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<(), GpuError> {
        self.check_health()?;
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(mode, move |result| {
            let _ = sender.send(result);
        });
        let deadline = Instant::now() + GPU_WAIT_TIMEOUT;
        self.device
            .poll(wgpu::PollType::Wait { submission_index: submission, timeout: Some(GPU_WAIT_TIMEOUT) })?;
        // Another thread polling the same device may have taken this map's callback and not
        // run it yet, or the map may wait for one more maintenance pass: keep polling until the
        // callback arrives rather than calling a finished submission a failed map.
        let mapped = loop {
            self.check_health()?;
            match receiver.recv_timeout(MAP_CALLBACK_POLL_INTERVAL) {
                Ok(result) => break result,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                    self.device.poll(wgpu::PollType::Poll)?;
                }
                Err(_) => return Err(GpuError::MapNotCompleted),
            }
        };
        Ok(mapped?)
    }

    /// The adapter's memory tier and what is free on it now.
    pub fn memory(&self) -> GpuMemory {
        GpuMemory::of_device(&self.device, self.adapter_info.device_type)
    }

    /// Bytes of GPU memory this device holds now, where the backend's allocator reports it.
    pub fn allocated_bytes(&self) -> Option<u64> {
        self.device.generate_allocator_report().map(|report| report.total_allocated_bytes)
    }

    /// A one-line description for logs and benchmark reports.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {} {})",
            self.adapter_info.name,
            self.adapter_info.backend,
            self.adapter_info.driver,
            self.adapter_info.driver_info
        )
    }

    /// A storage buffer holding `data`, readable and writable by kernels and copyable.
    pub fn storage_buffer(&self, label: &str, data: &[u8]) -> wgpu::Buffer {
        self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: data,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        })
    }

    /// A zero-filled storage buffer of `size` bytes (rounded up to 4).
    pub fn zeroed_storage(&self, label: &str, size: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: size.max(4).next_multiple_of(4),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// A uniform buffer holding kernel parameters that never change after load.
    pub fn uniform_buffer<T: bytemuck::Pod>(&self, label: &str, params: &T) -> wgpu::Buffer {
        self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytemuck::bytes_of(params),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        })
    }

    /// Binds `buffers` to bindings 0, 1, 2… of group 0 of `pipeline`.
    pub fn bind_group(
        &self,
        label: &str,
        pipeline: &KernelPipeline,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let numbered: Vec<(u32, &wgpu::Buffer)> =
            buffers.iter().enumerate().map(|(i, buffer)| (i as u32, *buffer)).collect();
        self.bind_group_numbered(label, pipeline, &numbered)
    }

    /// Binds each buffer to its binding number of group 0 of `pipeline`: for shaders whose
    /// variants leave gaps in the numbering.
    pub fn bind_group_numbered(
        &self,
        label: &str,
        pipeline: &KernelPipeline,
        buffers: &[(u32, &wgpu::Buffer)],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .map(|(binding, buffer)| wgpu::BindGroupEntry {
                binding: *binding,
                resource: buffer.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout: &pipeline.compute.get_bind_group_layout(0),
            entries: &entries,
        })
    }

    /// Copies `buffer` back to the CPU and waits: for tests, readbacks of a token id and load-time checks.
    pub fn read_buffer(&self, buffer: &wgpu::Buffer, offset: u64, size: u64) -> Result<Vec<u8>, GpuError> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, size);
        self.submit("readback", encoder);
        self.map_and_read(&staging, size)
    }

    pub fn read_f32(&self, buffer: &wgpu::Buffer, count: usize) -> Result<Vec<f32>, GpuError> {
        let bytes = self.read_buffer(buffer, 0, (count * 4) as u64)?;
        Ok(bytemuck::cast_slice(&bytes).to_vec())
    }

    pub fn read_u32(&self, buffer: &wgpu::Buffer, count: usize) -> Result<Vec<u32>, GpuError> {
        let bytes = self.read_buffer(buffer, 0, (count * 4) as u64)?;
        Ok(bytemuck::cast_slice(&bytes).to_vec())
    }

    /// Runs `body` inside a validation/out-of-memory error scope and turns what wgpu reports into a `GpuError`.
    pub fn checked<T>(&self, operation: &str, body: impl FnOnce() -> T) -> Result<T, GpuError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = body();
        let validation_error = pollster::block_on(validation.pop());
        let oom_error = pollster::block_on(oom.pop());
        if let Some(error) = oom_error {
            return Err(GpuError::OutOfMemory {
                operation: operation.to_string(),
                message: error.to_string(),
            });
        }
        if let Some(error) = validation_error {
            return Err(GpuError::Validation {
                operation: operation.to_string(),
                message: error.to_string(),
            });
        }
        Ok(value)
    }
}
