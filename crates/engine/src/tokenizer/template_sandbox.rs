//! Rendering models' chat templates in a child process with a memory limit and a deadline.
//!
//! Fuel counts a template's instructions and the output cap counts the bytes it writes, but one
//! instruction can double a string or a list (`s ~ s`, `l + l`, `replace`, `join`): a few dozen
//! ask for terabytes, and a process cannot survive a failed allocation (Rust aborts). So a
//! model's own template, read from an untrusted file, renders in a child: the same executable
//! re-run with [`RENDERER_ARG`], its address space limited, killed past a deadline. When it
//! dies, the render fails with [`TemplateError::MemoryLimit`] (and the probe at load refuses the
//! model), and the next render starts a new child.
//!
//! One child serves a process, started at its first render and kept: requests and replies are
//! JSON lines over its stdin and stdout, and it keeps the last template it compiled, so a chat
//! turn costs a round trip over pipes, not a process start.
//!
//! The sandbox is opt-in per process: binaries call [`sandbox_chat_templates`] first thing in
//! `main`. Library users and tests that do not render in-process, bounded by fuel and the output
//! cap only.
//!
//! Platforms: the memory limit is `RLIMIT_AS` on Linux and a Job object's limit on committed
//! memory on Windows. macOS does not enforce `RLIMIT_AS`, so there the child has the deadline
//! and no memory limit of its own: a runaway template ends the child when the system refuses
//! its allocations, never the app.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use minijinja::Environment;
use serde::{Deserialize, Serialize};

use super::chat_template::{compile_environment, render_with_limits, RenderRequest};
use super::limits::{TEMPLATE_RENDERER_MEMORY, TEMPLATE_RENDER_TIMEOUT};
use super::{ChatMessage, ChatTemplate, TemplateError};

/// The argument that makes a binary serve renders instead of starting (see
/// [`sandbox_chat_templates`]).
pub const RENDERER_ARG: &str = "__render-chat-template";

/// Bytes of the child's stderr read to explain its death (Rust's "memory allocation of N bytes
/// failed").
const STDERR_TAIL_BYTES: u64 = 4096;

static INSTALLED: OnceLock<TemplateSandbox> = OnceLock::new();

/// Call first thing in a binary's `main`. In the child started with [`RENDERER_ARG`], limits its
/// memory and serves renders until its stdin closes, then exits; otherwise makes every model
/// template of this process render in such a child of the current executable.
pub fn sandbox_chat_templates() {
    if std::env::args_os().nth(1).is_some_and(|arg| arg == RENDERER_ARG) {
        serve_renders();
    }
    // An empty path fails to start: model templates then fail with that error rather than
    // render unbounded in this process.
    let program = std::env::current_exe().unwrap_or_default();
    let _ = INSTALLED.set(TemplateSandbox::new(program));
}

/// The process's sandbox, when its binary installed one.
pub(super) fn installed() -> Option<&'static TemplateSandbox> {
    INSTALLED.get()
}

/// Renders templates in a child process of `program`, which must call
/// [`sandbox_chat_templates`] first thing in its `main`.
#[derive(Debug)]
pub struct TemplateSandbox {
    program: PathBuf,
    timeout: Duration,
    renderer: Mutex<Option<Renderer>>,
}

#[derive(Debug)]
struct Renderer {
    child: Child,
    /// Request lines, written to the child's stdin by a thread: a child that stops reading
    /// (a request longer than the pipe holds) blocks that thread, never the render, whose
    /// wait for the reply has the deadline.
    requests: Sender<Vec<u8>>,
    /// Reply lines, read by a thread so that waiting for one can time out; disconnected when
    /// the child's stdout closes.
    replies: Receiver<String>,
}

/// The child's answer to one request: the rendered text or the error, with the fields the
/// parent needs to rebuild the same [`TemplateError`].
#[derive(Debug, Serialize, Deserialize)]
enum RenderReply {
    Rendered(String),
    OutOfFuel { fuel: u64 },
    OutputTooLarge { limit: usize, input_bytes: usize },
    InvalidOutput,
    Failed(String),
}

impl TemplateSandbox {
    pub fn new(program: impl Into<PathBuf>) -> TemplateSandbox {
        TemplateSandbox {
            program: program.into(),
            timeout: TEMPLATE_RENDER_TIMEOUT,
            renderer: Mutex::new(None),
        }
    }

    /// How long a render may take before its child is killed ([`TEMPLATE_RENDER_TIMEOUT`] unless
    /// set).
    pub fn with_timeout(self, timeout: Duration) -> TemplateSandbox {
        TemplateSandbox { timeout, ..self }
    }

    /// Renders `template` for `messages` in the child, whatever the template's origin.
    pub fn render(
        &self,
        template: &ChatTemplate,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        self.render_request(&template.render_request(messages, add_generation_prompt)?)
    }

    /// The process id of the running child, if one is running.
    pub fn renderer_id(&self) -> Option<u32> {
        self.lock().as_ref().map(|renderer| renderer.child.id())
    }

    pub(super) fn render_request(&self, request: &RenderRequest) -> Result<String, TemplateError> {
        let mut line = serde_json::to_vec(request).map_err(|e| TemplateError::Renderer(e.into()))?;
        line.push(b'\n');
        let mut slot = self.lock();
        self.send(&mut slot, line).map_err(TemplateError::Renderer)?;
        let renderer = slot.as_mut().expect("a request was sent to it");
        let reply = renderer.replies.recv_timeout(self.timeout);
        let reply = match reply {
            Ok(reply) => reply,
            Err(RecvTimeoutError::Timeout) => {
                Renderer::stop(slot.take());
                return Err(TemplateError::TimedOut { seconds: self.timeout.as_secs_f64().ceil() as u64 });
            }
            Err(RecvTimeoutError::Disconnected) => {
                let ending = Renderer::stop(slot.take());
                return Err(TemplateError::MemoryLimit { limit_mib: TEMPLATE_RENDERER_MEMORY >> 20, ending });
            }
        };
        match serde_json::from_str::<RenderReply>(&reply) {
            Ok(reply) => reply.into(),
            Err(error) => {
                Renderer::stop(slot.take());
                Err(TemplateError::Renderer(io::Error::other(format!("an unreadable reply: {error}"))))
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Renderer>> {
        self.renderer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `line` to the child's writer, first starting a child if none is running or the
    /// last one died between renders (killed from outside).
    fn send(&self, slot: &mut Option<Renderer>, line: Vec<u8>) -> io::Result<()> {
        if let Some(renderer) = slot.as_mut() {
            if renderer.child.try_wait()?.is_some() {
                Renderer::stop(slot.take());
            }
        }
        let renderer = match slot {
            Some(renderer) => renderer,
            None => slot.insert(self.spawn()?),
        };
        // The writer ends only after a failed write, when the child is gone: its reply
        // channel then disconnects too, and the render fails with how the child ended.
        let _ = renderer.requests.send(line);
        Ok(())
    }

    fn spawn(&self) -> io::Result<Renderer> {
        let mut child = Command::new(&self.program)
            .arg(RENDERER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A backtrace of a failed allocation says nothing about the template and takes
            // seconds to print at the memory limit.
            .env("RUST_BACKTRACE", "0")
            .spawn()?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (requests, lines) = mpsc::channel();
        let (sender, replies) = mpsc::channel();
        let threads = std::thread::Builder::new()
            .name("chat-template-requests".into())
            .spawn(move || write_requests(stdin, lines))
            .and_then(|_| {
                std::thread::Builder::new().name("chat-template-replies".into()).spawn(move || {
                    for line in BufReader::new(stdout).lines() {
                        let Ok(line) = line else { break };
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                })
            });
        if let Err(error) = threads {
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
        Ok(Renderer { child, requests, replies })
    }
}

/// Writes each request line to the child until the sandbox drops its sender or a write fails
/// (the child is gone).
fn write_requests(mut stdin: ChildStdin, lines: Receiver<Vec<u8>>) {
    for line in lines {
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
            break;
        }
    }
}

impl Renderer {
    /// Kills and reaps the child, if any; how it ended, with the first line it wrote to stderr.
    fn stop(renderer: Option<Renderer>) -> String {
        let Some(Renderer { mut child, requests, .. }) = renderer else { return String::new() };
        drop(requests);
        let _ = child.kill();
        let status = match child.wait() {
            Ok(status) => status.to_string(),
            Err(error) => format!("not reaped: {error}"),
        };
        let mut stderr = String::new();
        if let Some(pipe) = child.stderr.take() {
            let _ = pipe.take(STDERR_TAIL_BYTES).read_to_string(&mut stderr);
        }
        match stderr.lines().find(|line| !line.trim().is_empty()) {
            Some(first) => format!("{status}: {}", first.trim()),
            None => status,
        }
    }
}

impl From<Result<String, TemplateError>> for RenderReply {
    fn from(result: Result<String, TemplateError>) -> RenderReply {
        match result {
            Ok(text) => RenderReply::Rendered(text),
            Err(TemplateError::OutOfFuel { fuel }) => RenderReply::OutOfFuel { fuel },
            Err(TemplateError::OutputTooLarge { limit, input_bytes }) => {
                RenderReply::OutputTooLarge { limit, input_bytes }
            }
            Err(TemplateError::InvalidOutput) => RenderReply::InvalidOutput,
            Err(TemplateError::Render(message)) => RenderReply::Failed(message),
            Err(other) => RenderReply::Failed(other.to_string()),
        }
    }
}

impl From<RenderReply> for Result<String, TemplateError> {
    fn from(reply: RenderReply) -> Result<String, TemplateError> {
        match reply {
            RenderReply::Rendered(text) => Ok(text),
            RenderReply::OutOfFuel { fuel } => Err(TemplateError::OutOfFuel { fuel }),
            RenderReply::OutputTooLarge { limit, input_bytes } => {
                Err(TemplateError::OutputTooLarge { limit, input_bytes })
            }
            RenderReply::InvalidOutput => Err(TemplateError::InvalidOutput),
            RenderReply::Failed(message) => Err(TemplateError::Render(message)),
        }
    }
}

/// The child: renders each request line from stdin and writes the reply line to stdout until
/// stdin closes, then exits.
fn serve_renders() -> ! {
    close_inherited_descriptors();
    limit_memory();
    // A panic is answered as a failed render; its message needs no printing.
    panic::set_hook(Box::new(|_| {}));
    let mut compiled: Option<(String, Environment<'static>)> = None;
    let mut stdout = io::stdout().lock();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let reply = panic::catch_unwind(AssertUnwindSafe(|| render_line(&line, &mut compiled)))
            .unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("no message");
                compiled = None;
                RenderReply::Failed(format!("the renderer panicked: {message}"))
            });
        let written = serde_json::to_writer(&mut stdout, &reply).is_ok()
            && stdout.write_all(b"\n").is_ok()
            && stdout.flush().is_ok();
        if !written {
            break;
        }
    }
    std::process::exit(0)
}

/// Closes every descriptor but the three standard ones. The child inherits whatever the parent
/// had open without close-on-exec (an app's display, D-Bus and web-process sockets among them);
/// held here they would keep the parent's peers waiting for them to close after the parent quits.
#[cfg(target_os = "linux")]
fn close_inherited_descriptors() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return };
    let inherited: Vec<i32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in inherited {
        // SAFETY: nothing in this process uses these descriptors: it has only just started, and
        // the directory listing's own descriptor is closed by now (closing it again fails harmlessly).
        unsafe {
            libc::close(fd);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn close_inherited_descriptors() {}

fn render_line(line: &str, compiled: &mut Option<(String, Environment<'static>)>) -> RenderReply {
    let request: RenderRequest = match serde_json::from_str(line) {
        Ok(request) => request,
        Err(error) => return RenderReply::Failed(format!("an unreadable render request: {error}")),
    };
    if compiled.as_ref().is_none_or(|(source, _)| *source != request.source) {
        match compile_environment(&request.source) {
            Ok(environment) => *compiled = Some((request.source.to_string(), environment)),
            Err(error) => return RenderReply::Failed(format!("the chat template does not compile: {error}")),
        }
    }
    let (_, environment) = compiled.as_ref().expect("compiled above");
    render_with_limits(environment, &request).into()
}

/// Caps the child's address space at what it maps at start (the executable and its shared
/// libraries) plus [`TEMPLATE_RENDERER_MEMORY`], and turns off core files, which a child dying
/// at its limit would write a GiB of.
#[cfg(target_os = "linux")]
fn limit_memory() {
    // The parameter's type is libc's for the target (it differs between glibc and musl).
    let lower = |resource, bytes: u64| {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
        unsafe {
            if libc::getrlimit(resource, &mut limit) == 0 {
                let bytes = (bytes as libc::rlim_t).min(limit.rlim_max);
                limit.rlim_cur = bytes;
                limit.rlim_max = bytes;
                libc::setrlimit(resource, &limit);
            }
        }
    };
    lower(libc::RLIMIT_CORE, 0);
    if let Some(mapped) = address_space_bytes() {
        lower(libc::RLIMIT_AS, mapped.saturating_add(TEMPLATE_RENDERER_MEMORY));
    }
}

/// Puts the child in a Job object of its own whose limit on committed memory is
/// [`TEMPLATE_RENDERER_MEMORY`] (jobs nest since Windows 8): past it an allocation fails and
/// the child ends, as at Linux's `RLIMIT_AS`. Windows commits memory as it is used, so what
/// the child committed at start, unlike Linux's mapped libraries, needs no allowance.
#[cfg(windows)]
fn limit_memory() {
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_PROCESS_MEMORY,
    };
    use windows_sys::Win32::System::Threading::GetCurrentProcess;
    // SAFETY: the job handle is checked before use and left open for the process's life (the
    // limit holds while the job exists); the information struct is plain data, zeroed, then
    // passed with its own size.
    unsafe {
        let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
        if job.is_null() {
            return;
        }
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_PROCESS_MEMORY;
        limits.ProcessMemoryLimit = usize::try_from(TEMPLATE_RENDERER_MEMORY).unwrap_or(usize::MAX);
        let set = SetInformationJobObject(
            job,
            JobObjectExtendedLimitInformation,
            std::ptr::from_ref(&limits).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        );
        if set != 0 {
            AssignProcessToJobObject(job, GetCurrentProcess());
        }
    }
}

#[cfg(not(any(target_os = "linux", windows)))]
fn limit_memory() {}

/// The process's mapped address space: the first field of `/proc/self/statm`, in pages.
#[cfg(target_os = "linux")]
fn address_space_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(u64::try_from(page_size).ok()?))
}
