//! WGSL has no preprocessor, so kernel variants (weight type, f16 or f32 storage, subgroup or
//! shared-memory reductions) come from one source through a small one: `#include "file.wgsl"`,
//! `#ifdef NAME` / `#ifndef NAME` / `#else` / `#endif`, and defines with a value become
//! module-scope `const NAME = value;` declarations.

include!(concat!(env!("OUT_DIR"), "/embedded_shaders.rs"));

/// A define given to a shader: a flag (`value` empty) or a WGSL constant expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Define {
    pub name: String,
    pub value: String,
}

impl Define {
    pub fn flag(name: &str) -> Self {
        Self { name: name.to_string(), value: String::new() }
    }
    pub fn value(name: &str, value: impl ToString) -> Self {
        Self { name: name.to_string(), value: value.to_string() }
    }
    pub fn u32(name: &str, value: u32) -> Self {
        Self::value(name, format!("{value}u"))
    }
    /// An f32 literal that reads back as exactly `value` (the shortest such decimal).
    pub fn f32(name: &str, value: f32) -> Self {
        Self::value(name, format!("{value:e}f"))
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShaderSourceError {
    #[error("shader '{0}' is not in shaders/")]
    UnknownShader(String),
    #[error("{file}:{line}: {message}")]
    Directive { file: String, line: usize, message: String },
    #[error("#include nesting deeper than 8 starting at '{0}' (an include cycle?)")]
    IncludeDepth(String),
}

fn embedded(name: &str) -> Result<&'static str, ShaderSourceError> {
    EMBEDDED_SHADERS
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, source)| *source)
        .ok_or_else(|| ShaderSourceError::UnknownShader(name.to_string()))
}

/// The final WGSL for `name` with `defines`: enables, then constants, then the expanded body.
pub fn expand(name: &str, defines: &[Define]) -> Result<String, ShaderSourceError> {
    let mut out = String::new();
    if defines.iter().any(|d| d.name == "F16") {
        out.push_str("enable f16;\n");
    }
    if defines.iter().any(|d| d.name == "COOPERATIVE_MATRIX") {
        out.push_str("enable wgpu_cooperative_matrix;\n");
    }
    for define in defines.iter().filter(|d| !d.value.is_empty()) {
        out.push_str(&format!("const {} = {};\n", define.name, define.value));
    }
    expand_into(name, embedded(name)?, defines, 0, &mut out)?;
    Ok(out)
}

fn expand_into(
    file: &str,
    source: &str,
    defines: &[Define],
    depth: usize,
    out: &mut String,
) -> Result<(), ShaderSourceError> {
    if depth > 8 {
        return Err(ShaderSourceError::IncludeDepth(file.to_string()));
    }
    let is_defined = |name: &str| defines.iter().any(|d| d.name == name);
    // Each entry: (this branch is taken, some enclosing branch is not taken).
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let active = |stack: &[(bool, bool)]| stack.last().is_none_or(|&(taken, outer_off)| taken && !outer_off);
    let err = |line: usize, message: &str| ShaderSourceError::Directive {
        file: file.to_string(),
        line: line + 1,
        message: message.to_string(),
    };

    for (number, line) in source.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("#ifdef ").or_else(|| trimmed.strip_prefix("#ifndef ")) {
            let wanted = trimmed.starts_with("#ifdef");
            let outer_off = !active(&stack);
            stack.push((is_defined(rest.trim()) == wanted, outer_off));
        } else if trimmed.starts_with("#else") {
            let top = stack.last_mut().ok_or_else(|| err(number, "#else without #ifdef"))?;
            top.0 = !top.0;
        } else if trimmed.starts_with("#endif") {
            stack.pop().ok_or_else(|| err(number, "#endif without #ifdef"))?;
        } else if let Some(rest) = trimmed.strip_prefix("#include ") {
            if active(&stack) {
                let included = rest.trim().trim_matches('"');
                expand_into(included, embedded(included)?, defines, depth + 1, out)?;
            }
        } else if trimmed.starts_with('#') {
            return Err(err(number, &format!("unknown directive '{trimmed}'")));
        } else if active(&stack) {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !stack.is_empty() {
        return Err(err(source.lines().count(), "missing #endif"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_text(source: &str, defines: &[Define]) -> Result<String, ShaderSourceError> {
        let mut out = String::new();
        expand_into("test.wgsl", source, defines, 0, &mut out)?;
        Ok(out)
    }

    #[test]
    fn branches_follow_defines_including_nesting() {
        let source = "a\n#ifdef X\nb\n#ifndef Y\nc\n#else\nd\n#endif\n#else\ne\n#endif\nf\n";
        assert_eq!(expand_text(source, &[]).unwrap(), "a\ne\nf\n");
        assert_eq!(expand_text(source, &[Define::flag("X")]).unwrap(), "a\nb\nc\nf\n");
        assert_eq!(expand_text(source, &[Define::flag("X"), Define::flag("Y")]).unwrap(), "a\nb\nd\nf\n");
    }

    #[test]
    fn unbalanced_directives_are_errors() {
        assert!(matches!(expand_text("#ifdef X\n", &[]), Err(ShaderSourceError::Directive { .. })));
        assert!(matches!(expand_text("#endif\n", &[]), Err(ShaderSourceError::Directive { .. })));
        assert!(matches!(expand_text("#pragma x\n", &[]), Err(ShaderSourceError::Directive { .. })));
    }

    #[test]
    fn value_defines_become_constants_and_f16_enables() {
        let name = EMBEDDED_SHADERS[0].0;
        let text = expand(name, &[Define::flag("F16"), Define::u32("WG", 64)]).unwrap();
        assert!(text.starts_with("enable f16;\nconst WG = 64u;\n"));
    }

    #[test]
    fn unknown_shader_is_named() {
        assert_eq!(expand("nope.wgsl", &[]), Err(ShaderSourceError::UnknownShader("nope.wgsl".into())));
    }
}
