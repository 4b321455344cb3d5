use anyhow::Result;
use doppler_engine::store::ByteSize;

#[derive(clap::Args)]
pub struct DevicesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DevicesArgs) -> Result<()> {
    let adapters = doppler_engine::gpu::list_adapters();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&adapters)?);
        return Ok(());
    }
    if adapters.is_empty() {
        anyhow::bail!(
            "no GPU adapter found (on Linux without a GPU, install mesa-vulkan-drivers for lavapipe)"
        );
    }
    for (index, adapter) in adapters.iter().enumerate() {
        let caps = &adapter.capabilities;
        println!(
            "[{index}] {} — {} {} ({} {})",
            adapter.name, adapter.backend, adapter.device_type, adapter.driver, adapter.driver_info
        );
        println!(
            "    shader-f16: {}  subgroups: {} (size {}..{})  timestamps: {} (inside passes: {})",
            caps.shader_f16,
            caps.subgroups,
            caps.subgroup_min_size,
            caps.subgroup_max_size,
            caps.timestamps,
            caps.timestamps_inside_passes
        );
        println!(
            "    max storage binding: {} MiB  max buffer: {} MiB  workgroup storage: {} KiB",
            caps.max_storage_binding >> 20,
            caps.max_buffer_size >> 20,
            caps.max_workgroup_storage_bytes >> 10
        );
        let memory = &adapter.memory;
        let optional = |bytes: Option<u64>| bytes.map_or("unknown".to_string(), |b| ByteSize(b).to_string());
        println!(
            "    memory: {} — device {} ({} free)  host RAM {} ({} free)  model budget {}",
            memory.tier.describe(),
            optional(memory.device_total),
            optional(memory.device_available),
            ByteSize(memory.host_total),
            ByteSize(memory.host_available),
            optional(memory.budget)
        );
    }
    Ok(())
}
