//! The chat template sandbox: a model's template rendered in the child process (`doppler`
//! re-run as the renderer) gives byte for byte what rendering in this process gives, one child
//! serves render after render, a child that dies (of its memory limit, its deadline, or
//! killed from outside) is replaced at the next render, and one that stops reading its
//! requests cannot hold a render past its deadline.

// Where the fixtures and default models are (the rest of tests/support is GPU helpers); this
// binary uses a part of the file.
#[allow(dead_code)]
#[path = "support/models.rs"]
mod models;

use std::process::Command;
use std::time::{Duration, Instant};

use doppler_engine::gguf::GgufFile;
use doppler_engine::tokenizer::{
    ChatMessage, ChatTemplate, TemplateError, TemplateOrigin, TemplateSandbox, Tokenizer,
};
use models::{fixture, model_path, SMOLLM2};

fn sandbox() -> TemplateSandbox {
    TemplateSandbox::new(env!("CARGO_BIN_EXE_doppler"))
}

fn model_template(path: &std::path::Path) -> (Tokenizer, ChatTemplate) {
    let gguf = GgufFile::open(path).unwrap();
    let tokenizer = Tokenizer::from_gguf(&gguf).unwrap();
    let template = ChatTemplate::for_model(&gguf, &tokenizer).unwrap();
    (tokenizer, template)
}

fn conversations() -> Vec<Vec<ChatMessage>> {
    vec![
        vec![ChatMessage::user("Hi")],
        vec![
            ChatMessage::system("Answer in one line.\n"),
            ChatMessage::user("  Why is the sky blue? \"Rayleigh\"\t\\ née 空 🌍 "),
            ChatMessage::assistant("Shorter wavelengths scatter more."),
            ChatMessage::user("And sunsets?\n\n"),
        ],
        vec![ChatMessage::user("a"), ChatMessage::user("b")],
        Vec::new(),
    ]
}

/// The same outcome, text or error, in the child as in this process.
fn assert_same_render(sandbox: &TemplateSandbox, name: &str, template: &ChatTemplate) {
    for messages in conversations() {
        for add_generation_prompt in [true, false] {
            let in_child = sandbox.render(template, &messages, add_generation_prompt);
            let here = template.render(&messages, add_generation_prompt);
            assert_eq!(
                in_child.map_err(|e| e.to_string()),
                here.map_err(|e| e.to_string()),
                "{name}, {} messages",
                messages.len()
            );
        }
    }
}

#[test]
fn model_templates_render_the_same_in_the_sandbox() {
    let sandbox = sandbox();
    let mut models: Vec<_> = ["llama3", "gemma3", "mistral", "phi3", "qwen2", "qwen3"].map(fixture).into();
    models.extend(model_path(SMOLLM2));
    for path in &models {
        let (_, template) = model_template(path);
        assert_eq!(template.origin(), TemplateOrigin::Model, "{}", path.display());
        assert_same_render(&sandbox, &path.display().to_string(), &template);
    }
    // Errors cross over with the same text: the template's own, fuel, the output cap.
    let (tokenizer, _) = model_template(&fixture("llama3"));
    for source in [
        "{{ raise_exception('no tools here') }}",
        "{{ messages[0].content.nope() }}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}",
    ] {
        assert_same_render(&sandbox, source, &ChatTemplate::from_source(source, &tokenizer).unwrap());
    }
}

const DOUBLING: &str =
    "{% set ns = namespace(s='x') %}{% for i in range(48) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}";

/// Copies a 50 MB string at each of its steps: within its fuel and memory for minutes.
const SLOW: &str = "{% set ns = namespace(s='x' * 50000000) %}{% for i in range(100000) %}{% set ns.t = ns.s ~ 'y' %}{% endfor %}";

#[test]
fn a_dead_renderer_is_replaced_at_the_next_render() {
    let sandbox = sandbox();
    let (tokenizer, template) = model_template(&fixture("qwen2"));
    let messages = [ChatMessage::user("Hi")];
    let expected = template.render(&messages, true).unwrap();
    assert_eq!(sandbox.renderer_id(), None, "started at the first render");
    assert_eq!(sandbox.render(&template, &messages, true).unwrap(), expected);
    let first = sandbox.renderer_id().expect("a running renderer");
    assert_eq!(sandbox.render(&template, &messages, true).unwrap(), expected);
    assert_eq!(sandbox.renderer_id(), Some(first), "one renderer serves every render");

    // Dead of its memory limit.
    let doubling = ChatTemplate::from_source(DOUBLING, &tokenizer).unwrap();
    let error = sandbox.render(&doubling, &messages, true).unwrap_err();
    assert!(matches!(error, TemplateError::MemoryLimit { limit_mib: 1024, .. }), "{error}");
    assert!(error.is_resource_limit());
    assert_eq!(sandbox.renderer_id(), None);
    assert_eq!(sandbox.render(&template, &messages, true).unwrap(), expected);
    let second = sandbox.renderer_id().expect("a new renderer");
    assert_ne!(second, first);

    // Killed from outside between renders.
    let killed = Command::new("kill").args(["-KILL", &second.to_string()]).status().unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_zombie(second) {
        assert!(Instant::now() < deadline, "renderer {second} still running after SIGKILL");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sandbox.render(&template, &messages, true).unwrap(), expected);
    let third = sandbox.renderer_id().expect("a new renderer");
    assert_ne!(third, second);

    // Past its deadline.
    let sandbox = sandbox.with_timeout(Duration::from_millis(500));
    let slow = ChatTemplate::from_source(SLOW, &tokenizer).unwrap();
    let start = Instant::now();
    let error = sandbox.render(&slow, &messages, true).unwrap_err();
    assert!(matches!(error, TemplateError::TimedOut { .. }), "{error}");
    assert!(start.elapsed() < Duration::from_secs(5), "stopped after {:?}", start.elapsed());
    assert_eq!(sandbox.renderer_id(), None);
    assert_eq!(sandbox.render(&template, &messages, true).unwrap(), expected);
}

#[cfg(unix)]
#[test]
fn a_renderer_that_stops_reading_times_out_on_a_long_request() {
    use std::os::unix::fs::PermissionsExt;
    // A "renderer" that never reads its stdin: a request longer than a pipe holds cannot be
    // written whole, and the render must still end at its deadline.
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("deaf-renderer");
    std::fs::write(&program, "#!/bin/sh\nexec sleep 60\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sandbox = TemplateSandbox::new(&program).with_timeout(Duration::from_millis(500));
    let (_, template) = model_template(&fixture("qwen2"));
    let long = [ChatMessage::user("many words ".repeat(200_000))];
    let start = Instant::now();
    let error = sandbox.render(&template, &long, true).unwrap_err();
    assert!(matches!(error, TemplateError::TimedOut { .. }), "{error}");
    assert!(start.elapsed() < Duration::from_secs(5), "stopped after {:?}", start.elapsed());
    assert_eq!(sandbox.renderer_id(), None, "the stuck child is gone");
}

/// Whether `pid` has ended and waits to be reaped.
fn is_zombie(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the parenthesized command name.
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}
