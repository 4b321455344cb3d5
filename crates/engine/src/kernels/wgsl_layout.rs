//! A kernel's uniform struct is written twice, once in Rust and once in WGSL, and nothing at
//! run time notices when one changes alone: the GPU reads shifted fields. `assert_wgsl_layout!`
//! checks the pair through naga's reflection of the WGSL struct: same size, and every Rust
//! field at the same offset with the same scalar type (padding fields are left out).

use crate::gpu::shader::expand;

/// The WGSL name of a Rust scalar a uniform may hold.
pub(crate) trait WgslScalar {
    const NAME: &'static str;
}

impl WgslScalar for u32 {
    const NAME: &'static str = "u32";
}

impl WgslScalar for i32 {
    const NAME: &'static str = "i32";
}

impl WgslScalar for f32 {
    const NAME: &'static str = "f32";
}

/// Panics unless `struct wgsl_struct` of `shader` has `rust_size` bytes and each of `fields`
/// (name, byte offset, WGSL scalar) at the same offset with the same type.
pub(crate) fn check(shader: &str, wgsl_struct: &str, rust_size: usize, fields: &[(&str, usize, &str)]) {
    let source = expand(shader, &[]).unwrap();
    let start = source
        .find(&format!("struct {wgsl_struct} {{"))
        .unwrap_or_else(|| panic!("{shader} has no struct {wgsl_struct}"));
    let end = start + source[start..].find("\n}").expect("struct closes") + 2;
    let module = naga::front::wgsl::parse_str(&source[start..end]).unwrap_or_else(|e| {
        panic!("{shader} struct {wgsl_struct}: {}", e.emit_to_string(&source[start..end]))
    });
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let (members, span) = module
        .types
        .iter()
        .find_map(|(_, ty)| match &ty.inner {
            naga::TypeInner::Struct { members, span } if ty.name.as_deref() == Some(wgsl_struct) => {
                Some((members, *span))
            }
            _ => None,
        })
        .expect("the parsed struct");
    assert_eq!(
        span as usize, rust_size,
        "{shader} struct {wgsl_struct}: WGSL size {span}, Rust size {rust_size}"
    );
    for &(name, offset, scalar) in fields {
        let member = members
            .iter()
            .find(|m| m.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{shader} struct {wgsl_struct} has no field {name}"));
        assert_eq!(
            member.offset as usize, offset,
            "{shader} {wgsl_struct}.{name}: WGSL offset {}, Rust {offset}",
            member.offset
        );
        let wgsl_type = match module.types[member.ty].inner {
            naga::TypeInner::Scalar(naga::Scalar { kind: naga::ScalarKind::Uint, width: 4 }) => "u32",
            naga::TypeInner::Scalar(naga::Scalar { kind: naga::ScalarKind::Sint, width: 4 }) => "i32",
            naga::TypeInner::Scalar(naga::Scalar { kind: naga::ScalarKind::Float, width: 4 }) => "f32",
            ref other => panic!("{shader} {wgsl_struct}.{name}: {other:?} is not a 32-bit scalar"),
        };
        assert_eq!(wgsl_type, scalar, "{shader} {wgsl_struct}.{name}: WGSL type {wgsl_type}, Rust {scalar}");
    }
}

/// `assert_wgsl_layout!(RustStruct, "shader.wgsl", "WgslStruct", { field: type, … })`, listing
/// every field but padding; the types are checked against the Rust struct at compile time.
macro_rules! assert_wgsl_layout {
    ($rust:ty, $shader:literal, $wgsl:literal, { $($field:ident: $ty:ty),* $(,)? }) => {{
        $(let _: fn(&$rust) -> &$ty = |value| &value.$field;)*
        $crate::kernels::wgsl_layout::check(
            $shader,
            $wgsl,
            std::mem::size_of::<$rust>(),
            &[$((
                stringify!($field),
                std::mem::offset_of!($rust, $field),
                <$ty as $crate::kernels::wgsl_layout::WgslScalar>::NAME,
            )),*],
        );
    }};
}
pub(crate) use assert_wgsl_layout;
