//! Hostile model files: each is a real model (a small fixture, or a default model from
//! `DOPPLER_TEST_MODELS_DIR`) with its metadata or tensor table changed to ask for too
//! much. `doppler run` must refuse each within seconds, under 1 GiB of peak memory (2 GiB with
//! its chat template renderer), with an error naming the problem, and before it opens the GPU.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use doppler_engine::gguf::{GgufFile, GgufWriter, MetadataArray, MetadataValue, StringArray};
use doppler_engine::ModelFile;
use support::models::{fixture, model_path, GEMMA, SMOLLM2};

const TIME_LIMIT: Duration = Duration::from_secs(5);
/// The bound, for templates stopped by their renderer's memory limit: the renderer
/// fills its GiB before it dies, seconds on a busy machine.
const MEMORY_LIMITED_TIME_LIMIT: Duration = Duration::from_secs(30);
const MEMORY_LIMIT_KIB: i64 = 1024 * 1024;
/// `doppler run` and the child process it renders the model's chat template in, together.
const WITH_RENDERER_MEMORY_LIMIT_KIB: i64 = 2 * 1024 * 1024;

/// `source` rewritten with `edit` applied to its metadata entries (in file order).
fn rewritten(source: &Path, edit: impl FnOnce(&mut Vec<(String, MetadataValue)>)) -> Vec<u8> {
    let gguf = GgufFile::open(source).unwrap();
    let mut entries: Vec<(String, MetadataValue)> =
        gguf.metadata().iter().map(|(key, value)| (key.to_string(), value.clone())).collect();
    edit(&mut entries);
    let mut writer = GgufWriter::new();
    for (key, value) in entries {
        writer.add_metadata(key, value).unwrap();
    }
    for tensor in gguf.tensors() {
        writer
            .add_tensor(&tensor.name, &tensor.dims, tensor.ggml_type, gguf.tensor_data(tensor).to_vec())
            .unwrap();
    }
    writer.to_bytes().unwrap()
}

fn set(entries: &mut [(String, MetadataValue)], key: &str, value: impl Into<MetadataValue>) {
    let entry = entries.iter_mut().find(|(k, _)| k == key).unwrap_or_else(|| panic!("{key} present"));
    entry.1 = value.into();
}

fn with_key(source: &Path, key: &str, value: impl Into<MetadataValue>) -> Vec<u8> {
    let value = value.into();
    rewritten(source, |entries| match entries.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value,
        None => entries.push((key.to_string(), value)),
    })
}

fn find(bytes: &[u8], needle: &[u8]) -> usize {
    bytes.windows(needle.len()).position(|w| w == needle).expect("needle present")
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Where the first dimension of tensor `name`'s info is (after its name and n_dims).
fn tensor_dims_at(bytes: &[u8], name: &str) -> usize {
    let at = find(bytes, &[&(name.len() as u64).to_le_bytes()[..], name.as_bytes()].concat());
    at + 8 + name.len() + 4
}

fn tensor_offset_at(bytes: &[u8], name: &str) -> usize {
    let n_dims_at = tensor_dims_at(bytes, name) - 4;
    let n_dims = u32::from_le_bytes(bytes[n_dims_at..n_dims_at + 4].try_into().unwrap()) as usize;
    n_dims_at + 4 + 8 * n_dims + 4
}

/// Where the element count of metadata array `key` is.
fn array_count_at(bytes: &[u8], key: &str) -> usize {
    find(bytes, key.as_bytes()) + key.len() + 4 + 4
}

struct Outcome {
    success: bool,
    stderr: String,
    elapsed: Duration,
    peak_rss_kib: i64,
    /// The largest peak among its child processes (the chat template renderer).
    peak_child_rss_kib: i64,
}

/// The process's peak resident memory so far (its own, not counting the image it was spawned
/// from, which wait4's ru_maxrss would: a vfork-spawned child inherits its parent's peak).
fn peak_rss_kib(pid: u32) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The processes `pid` started and has not reaped, from every one of its threads.
fn child_ids(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|children| children.split_whitespace().filter_map(|id| id.parse().ok()).collect::<Vec<_>>())
        .collect()
}

/// Runs `doppler run` on `bytes` written to a file, polling its peak resident memory until it ends.
fn doppler_run(bytes: &[u8], extra_args: &[&str], time_limit: Duration) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.gguf");
    std::fs::write(&path, bytes).unwrap();
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_doppler"))
        .args(["run", "--model", path.to_str().unwrap(), "--prompt", "hi"])
        .args(extra_args)
        // An adapter that does not exist: were the GPU opened before the file is refused, the
        // error would be about the adapter, not the file.
        .env("DOPPLER_ADAPTER", "no-such-adapter-for-hostile-tests")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stderr_pipe.read_to_string(&mut text).unwrap();
        text
    });
    let mut peak = 0;
    let mut peak_child = 0;
    let status = loop {
        // Read before reaping: once the child has exited its memory figures are gone.
        peak = peak.max(peak_rss_kib(child.id()).unwrap_or(0));
        for id in child_ids(child.id()) {
            peak_child = peak_child.max(peak_rss_kib(id).unwrap_or(0));
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > 4 * time_limit {
            child.kill().unwrap();
            panic!("doppler run still running after {:?}", start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Outcome {
        success: status.success(),
        stderr: reader.join().unwrap(),
        elapsed: start.elapsed(),
        peak_rss_kib: peak,
        peak_child_rss_kib: peak_child,
    }
}

fn assert_refused(case: &str, bytes: &[u8], expected: &[&str]) {
    assert_refused_with(case, bytes, &[], expected);
}

fn assert_refused_with(case: &str, bytes: &[u8], extra_args: &[&str], expected: &[&str]) {
    assert_refused_within(case, bytes, extra_args, expected, TIME_LIMIT);
}

fn assert_refused_within(
    case: &str,
    bytes: &[u8],
    extra_args: &[&str],
    expected: &[&str],
    time_limit: Duration,
) {
    let outcome = doppler_run(bytes, extra_args, time_limit);
    let stderr = &outcome.stderr;
    assert!(!outcome.success, "{case}: accepted\n{stderr}");
    for needle in expected {
        assert!(stderr.contains(needle), "{case}: the error does not mention '{needle}':\n{stderr}");
    }
    assert!(
        !stderr.contains("no-such-adapter"),
        "{case}: the GPU was opened before the file was checked:\n{stderr}"
    );
    assert!(outcome.elapsed < time_limit, "{case}: took {:?}", outcome.elapsed);
    assert!(outcome.peak_rss_kib < MEMORY_LIMIT_KIB, "{case}: peak RSS {} KiB", outcome.peak_rss_kib);
    let with_renderer = outcome.peak_rss_kib + outcome.peak_child_rss_kib;
    assert!(
        with_renderer < WITH_RENDERER_MEMORY_LIMIT_KIB,
        "{case}: peak RSS with the renderer {with_renderer} KiB"
    );
}

#[test]
fn the_unchanged_models_pass_every_check() {
    let mut models = vec![fixture("llama3"), fixture("gemma3")];
    models.extend([SMOLLM2, GEMMA].into_iter().filter_map(model_path));
    for model in models {
        ModelFile::open(&model).unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    }
}

#[test]
fn hyperparameters_over_their_limits_are_refused() {
    let llama = fixture("llama3");
    let cases: [(&str, u64, &[&str]); 7] = [
        ("llama.block_count", u64::from(u32::MAX), &["llama.block_count", "4294967295", "limit of 512"]),
        ("llama.attention.head_count", 1 << 31, &["llama.attention.head_count", "limit"]),
        ("llama.attention.head_count_kv", 1 << 20, &["llama.attention.head_count_kv", "limit"]),
        ("llama.embedding_length", 1 << 31, &["llama.embedding_length", "limit"]),
        ("llama.feed_forward_length", 1 << 40, &["llama.feed_forward_length", "limit"]),
        ("llama.context_length", u64::from(u32::MAX), &["llama.context_length", "limit"]),
        ("llama.attention.key_length", 1 << 16, &["llama.attention.key_length", "limit"]),
    ];
    for (key, value, expected) in cases {
        assert_refused(key, &with_key(&llama, key, MetadataValue::U64(value)), expected);
    }
    // Under the limit but more than the file has.
    assert_refused(
        "500 layers",
        &with_key(&llama, "llama.block_count", 500u32),
        &["block_count", "500 layers"],
    );
}

#[test]
fn a_huge_requested_context_is_refused_before_the_gpu_opens() {
    let bytes = std::fs::read(fixture("llama3")).unwrap();
    assert_refused_with(
        "--ctx",
        &bytes,
        &["--ctx", "4000000000"],
        &["context of 4000000000 tokens", "limit"],
    );
}

#[test]
fn a_huge_vocabulary_claim_is_refused() {
    let llama = fixture("llama3");
    let no_tokens = rewritten(&llama, |entries| {
        entries.retain(|(k, _)| k != "tokenizer.ggml.tokens" && k != "llama.vocab_size");
        entries.push(("llama.vocab_size".to_string(), MetadataValue::U32(u32::MAX)));
    });
    assert_refused("vocab_size", &no_tokens, &["llama.vocab_size", "limit"]);

    let mut bytes = std::fs::read(&llama).unwrap();
    let at = array_count_at(&bytes, "tokenizer.ggml.tokens");
    put_u64(&mut bytes, at, 1 << 40);
    assert_refused("token count", &bytes, &["tokenizer.ggml.tokens", "1099511627776"]);
}

#[test]
fn giant_counts_and_lengths_in_the_file_are_refused() {
    let llama = fixture("llama3");
    let original = std::fs::read(&llama).unwrap();

    let mut bytes = original.clone();
    let at = array_count_at(&bytes, "tokenizer.ggml.merges");
    put_u64(&mut bytes, at, u64::MAX / 16);
    assert_refused("merge count", &bytes, &["tokenizer.ggml.merges", "cannot fit"]);

    let mut bytes = original.clone();
    put_u64(&mut bytes, 16, 1 << 50);
    assert_refused("metadata count", &bytes, &["metadata key/value", "cannot fit"]);

    let mut bytes = original.clone();
    put_u64(&mut bytes, 8, u64::MAX);
    assert_refused("tensor count", &bytes, &["tensor info", "cannot fit"]);

    let mut bytes = original.clone();
    let at = find(&bytes, b"general.architecture") + "general.architecture".len() + 4;
    put_u64(&mut bytes, at, u64::MAX - 7);
    assert_refused("string length", &bytes, &["general.architecture", "truncated"]);

    let many = rewritten(&fixture("llama3"), |entries| {
        entries.extend((0..70_000).map(|i| (format!("junk.{i}"), MetadataValue::U8(0))));
    });
    assert_refused("metadata entries", &many, &["metadata key/value count 70", "limit of 65536"]);
    let huge_array = with_key(&llama, "junk.array", MetadataArray::U8(vec![0; (1 << 22) + 1]));
    assert_refused("array length", &huge_array, &["junk.array", "limit of 4194304"]);
}

#[test]
fn tensor_tables_asking_for_too_much_are_refused() {
    let original = std::fs::read(fixture("llama3")).unwrap();

    let mut bytes = original.clone();
    let at = tensor_dims_at(&bytes, "token_embd.weight");
    put_u64(&mut bytes, at + 8, 1 << 40);
    assert_refused("huge dims", &bytes, &["token_embd.weight", "past end of file"]);

    let mut bytes = original.clone();
    let at = tensor_dims_at(&bytes, "token_embd.weight") - 4;
    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_refused("huge n_dims", &bytes, &["token_embd.weight", "4294967295 dimensions"]);

    let mut bytes = original.clone();
    let at = tensor_offset_at(&bytes, "output_norm.weight");
    put_u64(&mut bytes, at, (original.len() as u64).next_multiple_of(32));
    assert_refused("offset past EOF", &bytes, &["output_norm.weight", "past end of file"]);

    let mut bytes = original.clone();
    let embedding_at = tensor_offset_at(&bytes, "token_embd.weight");
    let embedding_offset = u64::from_le_bytes(bytes[embedding_at..embedding_at + 8].try_into().unwrap());
    let at = tensor_offset_at(&bytes, "output_norm.weight");
    put_u64(&mut bytes, at, embedding_offset);
    assert_refused("overlap", &bytes, &["output_norm.weight", "overlap"]);
}

/// Two nested loops of 100,000 steps each: 10^10 iterations if nothing stops them.
const LOOPING_TEMPLATE: &str =
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
const EXPLODING_TEMPLATE: &str = "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}";

#[test]
fn chat_templates_asking_for_too_much_are_refused() {
    let llama = fixture("llama3");
    let key = "tokenizer.chat_template";
    assert_refused("looping template", &with_key(&llama, key, LOOPING_TEMPLATE), &["chat template", "fuel"]);
    assert_refused(
        "exploding template",
        &with_key(&llama, key, EXPLODING_TEMPLATE),
        &["chat template", "wrote more than"],
    );
    let huge = format!("{{# {} #}}", "x".repeat(300 * 1024));
    assert_refused("huge template", &with_key(&llama, key, huge), &["chat template", "over the limit"]);
}

/// Templates that double a string or a list with each of a few dozen instructions: 2^48 bytes
/// within their fuel and before they write a byte, so only the renderer's memory limit stops
/// them.
const DOUBLING_TEMPLATES: [(&str, &str); 3] = [
    ("string", "{% set ns = namespace(s='x') %}{% for i in range(48) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"),
    ("list", "{% set ns = namespace(l=[0]) %}{% for i in range(48) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}"),
    ("join", "{% set ns = namespace(s='x') %}{% for i in range(48) %}{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}{{ ns.s|length }}"),
];
/// Doubling by `replace` costs a few seconds of work per GiB: on a busy machine the renderer's
/// deadline may stop it before its memory limit does.
const REPLACE_DOUBLING_TEMPLATE: &str =
    "{% set ns = namespace(s='x') %}{% for i in range(48) %}{% set ns.s = ns.s|replace('x', 'xx') %}{% endfor %}{{ ns.s|length }}";

#[test]
fn chat_templates_doubling_their_data_are_stopped_by_the_renderers_limits() {
    let llama = fixture("llama3");
    let key = "tokenizer.chat_template";
    for (case, template) in DOUBLING_TEMPLATES {
        let expected = ["chat template", "memory limit"];
        assert_refused_within(
            case,
            &with_key(&llama, key, template),
            &[],
            &expected,
            MEMORY_LIMITED_TIME_LIMIT,
        );
    }
    let replace = with_key(&llama, key, REPLACE_DOUBLING_TEMPLATE);
    let expected = ["chat template", "was stopped"];
    assert_refused_within("replace", &replace, &[], &expected, MEMORY_LIMITED_TIME_LIMIT);
}

/// The default models, when present, with the three hostile edits.
#[test]
fn default_models_with_hostile_metadata_are_refused() {
    let (Some(smollm), Some(gemma)) = (model_path(SMOLLM2), model_path(GEMMA)) else { return };
    assert_refused(
        "SmolLM2 layers",
        &with_key(&smollm, "llama.block_count", u32::MAX),
        &["block_count", "limit"],
    );
    let template = with_key(&smollm, "tokenizer.chat_template", LOOPING_TEMPLATE);
    assert_refused("SmolLM2 template", &template, &["chat template", "fuel"]);
    let template = with_key(&smollm, "tokenizer.chat_template", DOUBLING_TEMPLATES[0].1);
    let expected = ["chat template", "memory limit"];
    assert_refused_within("SmolLM2 doubling template", &template, &[], &expected, MEMORY_LIMITED_TIME_LIMIT);
    let prefixes = rewritten(&gemma, |entries| {
        let (_, tokens) = entries.iter().find(|(k, _)| k == "tokenizer.ggml.tokens").unwrap();
        let MetadataValue::Array(MetadataArray::String(tokens)) = tokens else {
            panic!("tokens are strings")
        };
        let replaced: StringArray = (0..tokens.len()).map(|id| "a".repeat(id % 1000 + 1)).collect();
        set(entries, "tokenizer.ggml.tokens", replaced);
    });
    assert_refused("Gemma prefixes", &prefixes, &["SentencePiece", "too costly"]);
}
