//! For the kernels' translation tests: naga parses, validates and translates a kernel variant
//! to SPIR-V (what wgpu does on Vulkan), and reports the shared memory it declares, which the
//! Rust side budgets against the adapter's limit.

use crate::gpu::{shader::expand, Define};

/// `shader` expanded with `defines`, translated to SPIR-V; panics naming the variant and
/// naga's error.
pub fn translate(shader: &str, defines: &[Define]) -> naga::Module {
    let source = expand(shader, defines).unwrap();
    let variant = format!("{shader} {defines:?}");
    let module = naga::front::wgsl::parse_str(&source)
        .unwrap_or_else(|e| panic!("{variant}: {}", e.emit_to_string(&source)));
    let info =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{variant}: {}", e.emit_to_string(&source)));
    let options = naga::back::spv::Options { lang_version: (1, 6), ..Default::default() };
    let spirv = naga::back::spv::write_vec(&module, &info, &options, None)
        .unwrap_or_else(|e| panic!("{variant}: {e}"));
    assert!(!spirv.is_empty(), "{variant}");
    module
}

/// Bytes of workgroup memory `module` declares, less the variables named in `except`.
pub fn workgroup_bytes(module: &naga::Module, except: &[&str]) -> u32 {
    module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup)
        .filter(|(_, v)| !v.name.as_deref().is_some_and(|name| except.contains(&name)))
        .map(|(_, v)| module.types[v.ty].inner.size(module.to_ctx()))
        .sum()
}
