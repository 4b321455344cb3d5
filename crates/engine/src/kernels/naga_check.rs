//! Kernel variants lavapipe does not run (cooperative matrices) or that a test run does not
//! reach all of, as naga sees them: parsed, validated and translated to SPIR-V, with the shared
//! memory they declare, which the recorders budget against the adapter's limit.

use crate::gpu::{shader::expand, Define};

/// The module of `shader` expanded with `defines`, which naga parses, validates and translates
/// to SPIR-V; panics with `variant` and naga's message where it does not.
pub(crate) fn translated(variant: &str, shader: &str, defines: &[Define]) -> naga::Module {
    let source = expand(shader, defines).unwrap_or_else(|e| panic!("{variant}: {e}"));
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

/// Bytes of the workgroup variables `module` declares, but those named in `except`.
pub(crate) fn workgroup_bytes(module: &naga::Module, except: &[&str]) -> u32 {
    module
        .global_variables
        .iter()
        .filter(|(_, v)| {
            v.space == naga::AddressSpace::WorkGroup
                && !except.contains(&v.name.as_deref().unwrap_or_default())
        })
        .map(|(_, v)| module.types[v.ty].inner.size(module.to_ctx()))
        .sum()
}
