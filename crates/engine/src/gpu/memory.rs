//! Memory tiers: what kind of memory the adapter computes in, how much of it there is, and the
//! budget the loader keeps a model within.

use serde::Serialize;

const GIB: u64 = 1 << 30;

/// Dedicated memory from here up is the "large" tier: 7B–8B models in Q4_K_M with a long context.
const LARGE_DEDICATED: u64 = 16 * GIB;

/// Share of the driver's remaining budget (`VK_EXT_memory_budget`) a model may take: the driver
/// and the compositor allocate too while the model loads.
const AVAILABLE_SHARE: (u64, u64) = (19, 20);

/// Share of a dedicated heap a model may take where the driver does not say what is free.
const HEAP_SHARE: (u64, u64) = (9, 10);

/// Share of host RAM a model may take where the GPU computes in host memory (unified memory,
/// CPU adapters): Metal's recommended working set on Apple silicon is about three quarters of
/// RAM, and the rest of the system needs the remainder.
const HOST_SHARE: (u64, u64) = (3, 4);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdapterKind {
    Discrete,
    Integrated,
    Virtual,
    /// A software rasterizer on the CPU (lavapipe, WARP, SwiftShader).
    CpuEmulated,
    Unknown,
}

impl AdapterKind {
    pub fn of(device_type: wgpu::DeviceType) -> Self {
        match device_type {
            wgpu::DeviceType::DiscreteGpu => AdapterKind::Discrete,
            wgpu::DeviceType::IntegratedGpu => AdapterKind::Integrated,
            wgpu::DeviceType::VirtualGpu => AdapterKind::Virtual,
            wgpu::DeviceType::Cpu => AdapterKind::CpuEmulated,
            wgpu::DeviceType::Other => AdapterKind::Unknown,
        }
    }

    fn has_dedicated_memory(self) -> bool {
        matches!(self, AdapterKind::Discrete | AdapterKind::Virtual)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKind {
    /// The GPU's own memory, apart from host RAM.
    Dedicated,
    /// Host RAM shared with the CPU.
    Unified,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryTier {
    /// Dedicated memory of 16 GiB or more.
    DedicatedLarge,
    DedicatedSmall,
    Unified,
    Cpu,
}

impl MemoryTier {
    pub fn describe(self) -> &'static str {
        match self {
            MemoryTier::DedicatedLarge => "dedicated GPU memory, 16 GiB or more",
            MemoryTier::DedicatedSmall => "dedicated GPU memory, under 16 GiB",
            MemoryTier::Unified => "unified memory shared with the CPU",
            MemoryTier::Cpu => "CPU-emulated GPU in host RAM",
        }
    }
}

/// Where the device figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemorySource {
    /// Vulkan's device-local heap and `VK_EXT_memory_budget`'s budget and usage for it.
    VulkanMemoryBudget,
    /// Vulkan's device-local heap size alone.
    VulkanHeaps,
    /// The platform says nothing about the GPU's memory: host RAM stands in where the GPU
    /// shares it, and there is no budget for a dedicated GPU.
    HostRam,
}

/// The adapter's memory and the budget a model load keeps within.
#[derive(Debug, Clone, Serialize)]
pub struct GpuMemory {
    pub adapter_kind: AdapterKind,
    pub memory_kind: MemoryKind,
    pub tier: MemoryTier,
    /// Size of the largest device-local heap.
    pub device_total: Option<u64>,
    /// What the driver says this process may still allocate there.
    pub device_available: Option<u64>,
    /// 0 where the platform does not say.
    pub host_total: u64,
    pub host_available: u64,
    pub source: MemorySource,
    /// Bytes a model (weights, KV cache, scratch) may take; `None` where nothing tells.
    pub budget: Option<u64>,
}

/// What the driver reports of its device-local memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DeviceHeap {
    total: u64,
    available: Option<u64>,
}

/// RAM of the host: total and available to a new allocation now.
fn host_memory() -> (u64, u64) {
    match sysinfo::System::new() {
        Ok(mut system) => {
            system.refresh_memory();
            (system.total_memory(), system.available_memory())
        }
        Err(error) => {
            tracing::warn!(%error, "host memory unknown");
            (0, 0)
        }
    }
}

impl GpuMemory {
    /// What the adapter behind `device` has now (the figures change as memory is taken).
    pub fn of_device(device: &wgpu::Device, device_type: wgpu::DeviceType) -> GpuMemory {
        let (host_total, host_available) = host_memory();
        Self::from_parts(
            AdapterKind::of(device_type),
            vulkan::device_heap(device),
            host_total,
            host_available,
        )
    }

    pub fn of_adapter(adapter: &wgpu::Adapter) -> GpuMemory {
        let (host_total, host_available) = host_memory();
        Self::from_parts(
            AdapterKind::of(adapter.get_info().device_type),
            vulkan::adapter_heap(adapter),
            host_total,
            host_available,
        )
    }

    fn from_parts(
        adapter_kind: AdapterKind,
        heap: Option<DeviceHeap>,
        host_total: u64,
        host_available: u64,
    ) -> GpuMemory {
        let share = |bytes: u64, (num, den): (u64, u64)| bytes / den * num;
        let memory_kind =
            if adapter_kind.has_dedicated_memory() { MemoryKind::Dedicated } else { MemoryKind::Unified };
        let tier = match (adapter_kind, memory_kind) {
            (AdapterKind::CpuEmulated, _) => MemoryTier::Cpu,
            (_, MemoryKind::Unified) => MemoryTier::Unified,
            (_, MemoryKind::Dedicated) => match heap {
                Some(heap) if heap.total >= LARGE_DEDICATED => MemoryTier::DedicatedLarge,
                _ => MemoryTier::DedicatedSmall,
            },
        };
        let source = match heap {
            Some(DeviceHeap { available: Some(_), .. }) => MemorySource::VulkanMemoryBudget,
            Some(_) => MemorySource::VulkanHeaps,
            None => MemorySource::HostRam,
        };
        let budget = match memory_kind {
            MemoryKind::Dedicated => heap.map(|heap| match heap.available {
                Some(available) => share(available, AVAILABLE_SHARE),
                None => share(heap.total, HEAP_SHARE),
            }),
            // Host RAM is what runs out first, whatever heap the driver reports for it.
            MemoryKind::Unified if host_total == 0 => heap.and_then(|heap| heap.available),
            MemoryKind::Unified => {
                let host = share(host_total, HOST_SHARE).min(host_available);
                Some(match heap.and_then(|heap| heap.available) {
                    Some(available) => host.min(available),
                    None => host,
                })
            }
        };
        GpuMemory {
            adapter_kind,
            memory_kind,
            tier,
            device_total: heap.map(|heap| heap.total),
            device_available: heap.and_then(|heap| heap.available),
            host_total,
            host_available,
            source,
            budget,
        }
    }
}

#[cfg(any(windows, target_os = "linux", target_os = "android", target_os = "freebsd"))]
mod vulkan {
    use ash::vk;
    use wgpu::hal::api::Vulkan;

    use super::DeviceHeap;

    pub fn adapter_heap(adapter: &wgpu::Adapter) -> Option<DeviceHeap> {
        // SAFETY: the raw handles are only read from while `adapter` is borrowed; nothing is
        // created or destroyed through them.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }?;
        heap(hal.shared_instance().raw_instance(), hal.raw_physical_device())
    }

    pub fn device_heap(device: &wgpu::Device) -> Option<DeviceHeap> {
        // SAFETY: as above, with `device` borrowed.
        let hal = unsafe { device.as_hal::<Vulkan>() }?;
        heap(hal.shared_instance().raw_instance(), hal.raw_physical_device())
    }

    /// The largest device-local heap, with `VK_EXT_memory_budget`'s figures for it where the
    /// driver has the extension (budget less usage: what this process may still allocate).
    fn heap(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Option<DeviceHeap> {
        // SAFETY: `physical` belongs to `instance`, which outlives this call.
        let properties = unsafe { instance.get_physical_device_properties(physical) };
        let has_budget = properties.api_version >= vk::API_VERSION_1_1
            && unsafe { instance.enumerate_device_extension_properties(physical) }.is_ok_and(|extensions| {
                extensions
                    .iter()
                    .any(|ext| ext.extension_name_as_c_str() == Ok(ash::ext::memory_budget::NAME))
            });
        let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
        let memory = if has_budget {
            let mut properties2 = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
            // SAFETY: Vulkan 1.1 core, and the chained struct is the extension's, which the
            // device supports.
            unsafe { instance.get_physical_device_memory_properties2(physical, &mut properties2) };
            properties2.memory_properties
        } else {
            // SAFETY: as above.
            unsafe { instance.get_physical_device_memory_properties(physical) }
        };
        let heaps = &memory.memory_heaps[..(memory.memory_heap_count as usize).min(vk::MAX_MEMORY_HEAPS)];
        let (index, heap) = heaps
            .iter()
            .enumerate()
            .filter(|(_, heap)| heap.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
            .max_by_key(|(_, heap)| heap.size)?;
        let available =
            has_budget.then(|| budget.heap_budget[index].saturating_sub(budget.heap_usage[index]));
        Some(DeviceHeap { total: heap.size, available: available.filter(|&bytes| bytes > 0) })
    }
}

/// Metal and DX12 report no heaps through wgpu: host RAM stands in where the memory is shared.
#[cfg(not(any(windows, target_os = "linux", target_os = "android", target_os = "freebsd")))]
mod vulkan {
    use super::DeviceHeap;

    pub fn adapter_heap(_: &wgpu::Adapter) -> Option<DeviceHeap> {
        None
    }

    pub fn device_heap(_: &wgpu::Device) -> Option<DeviceHeap> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discrete_gpu_with_a_budget_keeps_a_margin_of_what_is_free() {
        let heap = DeviceHeap { total: 80 * GIB, available: Some(60 * GIB) };
        let memory = GpuMemory::from_parts(AdapterKind::Discrete, Some(heap), 128 * GIB, 100 * GIB);
        assert_eq!(memory.tier, MemoryTier::DedicatedLarge);
        assert_eq!(memory.memory_kind, MemoryKind::Dedicated);
        assert_eq!(memory.source, MemorySource::VulkanMemoryBudget);
        assert_eq!(memory.budget, Some(60 * GIB / 20 * 19));
    }

    #[test]
    fn a_small_discrete_gpu_without_a_budget_takes_most_of_its_heap() {
        let heap = DeviceHeap { total: 8 * GIB, available: None };
        let memory = GpuMemory::from_parts(AdapterKind::Discrete, Some(heap), 32 * GIB, 20 * GIB);
        assert_eq!(memory.tier, MemoryTier::DedicatedSmall);
        assert_eq!(memory.source, MemorySource::VulkanHeaps);
        assert_eq!(memory.budget, Some(8 * GIB / 10 * 9));
    }

    #[test]
    fn a_discrete_gpu_nothing_reports_on_has_no_budget() {
        let memory = GpuMemory::from_parts(AdapterKind::Discrete, None, 32 * GIB, 20 * GIB);
        assert_eq!(memory.source, MemorySource::HostRam);
        assert_eq!(memory.budget, None);
    }

    #[test]
    fn unified_and_cpu_adapters_are_bounded_by_host_ram() {
        let heap = DeviceHeap { total: 64 * GIB, available: Some(50 * GIB) };
        let apple = GpuMemory::from_parts(AdapterKind::Integrated, None, 16 * GIB, 12 * GIB);
        assert_eq!((apple.tier, apple.memory_kind), (MemoryTier::Unified, MemoryKind::Unified));
        assert_eq!(apple.budget, Some(12 * GIB));
        let busy = GpuMemory::from_parts(AdapterKind::Integrated, Some(heap), 16 * GIB, 4 * GIB);
        assert_eq!(busy.budget, Some(4 * GIB));
        let lavapipe = GpuMemory::from_parts(AdapterKind::CpuEmulated, Some(heap), 24 * GIB, 23 * GIB);
        assert_eq!(lavapipe.tier, MemoryTier::Cpu);
        assert_eq!(lavapipe.budget, Some(18 * GIB));
    }
}
