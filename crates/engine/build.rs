//! Embeds every WGSL file under `shaders/` into the engine at build time, so the binary
//! carries its kernels and the shader registry never drifts from the directory.

use std::{env, fs, path::PathBuf};

fn main() {
    let shader_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../shaders");
    let shader_dir = shader_dir.canonicalize().expect("shaders/ directory next to the workspace root");
    println!("cargo:rerun-if-changed={}", shader_dir.display());

    let mut entries: Vec<(String, PathBuf)> = fs::read_dir(&shader_dir)
        .expect("read shaders/")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let is_wgsl = path.extension().is_some_and(|ext| ext == "wgsl");
            is_wgsl.then(|| (path.file_name().unwrap().to_string_lossy().into_owned(), path))
        })
        .collect();
    entries.sort();

    let mut generated = String::from("/// (file name, source) for every shader in `shaders/`.\npub static EMBEDDED_SHADERS: &[(&str, &str)] = &[\n");
    for (name, path) in &entries {
        println!("cargo:rerun-if-changed={}", path.display());
        generated.push_str(&format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    generated.push_str("];\n");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("embedded_shaders.rs");
    fs::write(out, generated).expect("write embedded_shaders.rs");
}
