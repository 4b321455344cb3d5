//! Seeded fuzzing on stable Rust of everything a model file feeds: the GGUF parser (real files
//! mutated, and files generated from scratch), the model configuration, the tokenizer builder
//! (from generated vocabularies) and chat-template rendering (generated templates). An input
//! fails the run if it panics, takes more than 5 s, or asks the allocator for more than 512 MiB
//! at once or in all. A short fixed batch runs by default; `DOPPLER_FUZZ_ITERS=N` runs N inputs
//! per target and `DOPPLER_FUZZ_SEED=S` changes the seed.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use doppler_engine::gguf::{GgmlType, GgufFile, GgufWriter, MetadataArray, MetadataValue, StringArray};
use doppler_engine::model::ModelConfig;
use doppler_engine::tokenizer::{ChatMessage, ChatTemplate, Tokenizer, TokenizerSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::models::fixture;

const DEFAULT_ITERS: u64 = 150;
const INPUT_TIME_LIMIT: Duration = Duration::from_secs(5);
const MEMORY_LIMIT: usize = 512 << 20;

/// Counts live heap bytes and refuses (aborting with a message) past the limit, so an input
/// that asks for a huge allocation fails loudly instead of taking the machine's memory.
struct BoundedAllocator;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for BoundedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        if live > MEMORY_LIMIT {
            fail_without_allocating(b"fuzz input went over the memory limit");
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// The seed of the input being run, for the failure message.
static CURRENT_SEED: AtomicU64 = AtomicU64::new(0);

/// Prints `why` and the current seed with no allocation (the allocator itself may be calling),
/// then aborts: neither a hang nor an allocation failure can be unwound.
fn fail_without_allocating(why: &[u8]) -> ! {
    let mut digits = [0u8; 20];
    let mut seed = CURRENT_SEED.load(Ordering::Relaxed);
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (seed % 10) as u8;
        seed /= 10;
        if seed == 0 {
            break;
        }
    }
    let mut stderr = std::io::stderr();
    for part in [why, b" (replay with DOPPLER_FUZZ_SEED=", &digits[start..], b" DOPPLER_FUZZ_ITERS=1)\n"] {
        let _ = std::io::Write::write_all(&mut stderr, part);
    }
    std::process::abort();
}

#[global_allocator]
static ALLOCATOR: BoundedAllocator = BoundedAllocator;

/// Milliseconds since `EPOCH` at which the current input started (0: none running).
static INPUT_STARTED_MS: AtomicU64 = AtomicU64::new(0);
static EPOCH: Mutex<Option<Instant>> = Mutex::new(None);
/// Serializes the targets: the watchdog and the allocator limit are process-wide.
static ONE_TARGET: Mutex<()> = Mutex::new(());

fn now_ms() -> u64 {
    let mut epoch = EPOCH.lock().unwrap();
    epoch.get_or_insert_with(Instant::now).elapsed().as_millis() as u64 + 1
}

/// Aborts the process if one input runs past the time limit (a hang cannot be unwound).
fn start_watchdog() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(100));
            let started = INPUT_STARTED_MS.load(Ordering::Relaxed);
            if started != 0 && now_ms().saturating_sub(started) > INPUT_TIME_LIMIT.as_millis() as u64 {
                fail_without_allocating(b"fuzz input ran past 5 s");
            }
        });
    });
}

fn iterations() -> u64 {
    std::env::var("DOPPLER_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_ITERS)
}

fn base_seed() -> u64 {
    std::env::var("DOPPLER_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x00D0_997E)
}

/// Runs `target` on `iterations()` seeded inputs; a failing input's seed is printed, so
/// `DOPPLER_FUZZ_SEED` can replay it.
fn fuzz(name: &str, target: impl Fn(&mut StdRng)) {
    let _one = ONE_TARGET.lock().unwrap_or_else(|e| e.into_inner());
    start_watchdog();
    let iterations = iterations();
    let start = Instant::now();
    for i in 0..iterations {
        let seed = base_seed().wrapping_add(i);
        let mut rng = StdRng::seed_from_u64(seed);
        CURRENT_SEED.store(seed, Ordering::Relaxed);
        INPUT_STARTED_MS.store(now_ms(), Ordering::Relaxed);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| target(&mut rng)));
        INPUT_STARTED_MS.store(0, Ordering::Relaxed);
        if outcome.is_err() {
            panic!("{name}: input {i} (seed {seed}) panicked");
        }
    }
    eprintln!("{name}: {iterations} inputs, 0 crashes, {:?}", start.elapsed());
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

/// Values that break arithmetic: zero, one, powers of two and their neighbours, the maxima.
fn interesting_u64(rng: &mut StdRng) -> u64 {
    let shift = rng.random_range(0..64);
    match rng.random_range(0..6) {
        0 => 0,
        1 => 1,
        2 => 1 << shift,
        3 => (1u64 << shift).wrapping_sub(1),
        4 => u64::from(u32::MAX),
        _ => u64::MAX - rng.random_range(0..16),
    }
}

/// Mutates `bytes` within `structure` (the header, metadata and tensor table, where the parser
/// reads): flipped bits, random bytes, interesting little-endian integers, cuts and duplications.
fn mutate(rng: &mut StdRng, bytes: &mut Vec<u8>, structure: usize) {
    for _ in 0..rng.random_range(1..6) {
        let at = rng.random_range(0..structure.min(bytes.len()).max(1));
        match rng.random_range(0..5) {
            0 if at < bytes.len() => bytes[at] ^= 1 << rng.random_range(0..8),
            1 if at < bytes.len() => bytes[at] = rng.random(),
            2 if at + 8 <= bytes.len() => {
                let value = interesting_u64(rng);
                let width = [1, 2, 4, 8][rng.random_range(0..4)];
                bytes[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
            }
            3 => bytes.truncate(at.max(rng.random_range(0..bytes.len().max(1)))),
            _ if at < bytes.len() => {
                let end = (at + rng.random_range(1..64)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
            _ => {}
        }
    }
}

/// Everything loading does with a file short of the GPU (as `ModelFile::open`, from memory).
fn check_model(bytes: Vec<u8>) {
    let Ok(gguf) = GgufFile::from_bytes(bytes) else { return };
    let _ = ModelConfig::from_gguf(&gguf);
    if let Ok(tokenizer) = Tokenizer::from_gguf(&gguf) {
        if let Ok(ids) = tokenizer.encode("Hello, world! ▁ 123", tokenizer.add_bos()) {
            let _ = tokenizer.decode(&ids);
        }
        if let Ok(template) = ChatTemplate::for_model(&gguf, &tokenizer) {
            let _ = template.render(&[ChatMessage::user("hi")], true);
        }
    }
}

#[test]
fn mutated_model_files() {
    let models: Vec<(Vec<u8>, usize)> = ["llama3", "gemma3", "qwen2", "phi3"]
        .into_iter()
        .map(|name| {
            let bytes = fixture_bytes(name);
            let structure = GgufFile::from_bytes(bytes.clone()).unwrap().data_offset() as usize;
            (bytes, structure)
        })
        .collect();
    fuzz("mutated model files", |rng| {
        let (original, structure) = &models[rng.random_range(0..models.len())];
        let mut bytes = original.clone();
        mutate(rng, &mut bytes, *structure);
        check_model(bytes);
    });
}

const ALPHABET: &[&str] =
    &["a", "b", "ab", "▁", "é", "😀", " ", "\n", "<", ">", "|", "0x", "{", "%", "Ġ", "<0x41>", ""];

fn random_text(rng: &mut StdRng, max_parts: usize) -> String {
    (0..rng.random_range(0..=max_parts)).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())]).collect()
}

fn random_value(rng: &mut StdRng, depth: usize) -> MetadataValue {
    match rng.random_range(0..if depth > 2 { 8 } else { 9 }) {
        0 => MetadataValue::U8(rng.random()),
        1 => MetadataValue::I32(rng.random()),
        2 => MetadataValue::U32(interesting_u64(rng) as u32),
        3 => MetadataValue::U64(interesting_u64(rng)),
        4 => MetadataValue::F32(f32::from_bits(rng.random())),
        5 => MetadataValue::Bool(rng.random()),
        6 => MetadataValue::String(random_text(rng, 8)),
        7 => MetadataValue::Array(MetadataArray::String(
            (0..rng.random_range(0..20)).map(|_| random_text(rng, 4)).collect(),
        )),
        _ => MetadataValue::Array(MetadataArray::Array(
            (0..rng.random_range(0..4))
                .map(|_| match random_value(rng, depth + 1) {
                    MetadataValue::Array(array) => array,
                    _ => MetadataArray::I32(vec![rng.random(); rng.random_range(0..4)]),
                })
                .collect(),
        )),
    }
}

const KEYS: &[&str] = &[
    "general.architecture",
    "llama.block_count",
    "llama.embedding_length",
    "llama.feed_forward_length",
    "llama.attention.head_count",
    "llama.attention.head_count_kv",
    "llama.context_length",
    "llama.rope.dimension_count",
    "tokenizer.ggml.model",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.scores",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.chat_template",
    "general.alignment",
];

#[test]
fn generated_model_files() {
    fuzz("generated model files", |rng| {
        let mut writer = GgufWriter::new();
        for key in KEYS {
            if rng.random_bool(0.7) {
                let value = match *key {
                    "general.architecture" => {
                        MetadataValue::from(["llama", "gemma3", "qwen2", "phi3"][rng.random_range(0..4)])
                    }
                    "tokenizer.ggml.model" => {
                        MetadataValue::from(["llama", "gpt2", "bert"][rng.random_range(0..3)])
                    }
                    // The writer pads to the alignment: a huge one makes a huge file before the
                    // parser sees anything (mutations still put huge ones in front of the parser).
                    "general.alignment" => MetadataValue::U32(1 << rng.random_range(0..12)),
                    _ => random_value(rng, 0),
                };
                // The writer refuses some values (a bad alignment); the parser sees the rest.
                let _ = writer.add_metadata(*key, value);
            }
        }
        for i in 0..rng.random_range(0..6) {
            let row = 32 * rng.random_range(1..4);
            let rows = rng.random_range(1..4);
            let ty = [GgmlType::F32, GgmlType::Q8_0, GgmlType::F16][rng.random_range(0..3)];
            let name = ["token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight"][i % 3];
            let len = ty.row_bytes(row).unwrap() as usize * rows as usize;
            let _ = writer.add_tensor(format!("{name}{}", i / 3), &[row, rows], ty, vec![0; len]);
        }
        let mut bytes = writer.to_bytes().unwrap();
        if rng.random_bool(0.5) {
            let len = bytes.len();
            mutate(rng, &mut bytes, len);
        }
        check_model(bytes);
    });
}

#[test]
fn generated_vocabularies() {
    fuzz("generated vocabularies", |rng| {
        let n = rng.random_range(1..300);
        let mut tokens: StringArray = (0..n).map(|_| random_text(rng, 6)).collect();
        if rng.random_bool(0.2) {
            // Long shared prefixes.
            tokens = (0..n).map(|i| format!("{}{i}", "▁".repeat(rng.random_range(0..300)))).collect();
        }
        let mut metadata = GgufWriter::new();
        let model = ["llama", "gpt2"][rng.random_range(0..2)];
        let _ = metadata.add_metadata("general.architecture", "llama");
        let _ = metadata.add_metadata("tokenizer.ggml.model", model);
        let _ = metadata.add_metadata("tokenizer.ggml.tokens", tokens.clone());
        if rng.random_bool(0.7) {
            let scores: Vec<f32> = (0..n).map(|_| f32::from_bits(rng.random())).collect();
            let _ = metadata.add_metadata("tokenizer.ggml.scores", scores);
        }
        if rng.random_bool(0.7) {
            let types: Vec<i32> = (0..n).map(|_| rng.random_range(-1..8)).collect();
            let _ = metadata.add_metadata("tokenizer.ggml.token_type", types);
        }
        if rng.random_bool(0.7) {
            let merges: StringArray = (0..rng.random_range(0..400))
                .map(|_| {
                    let pick =
                        |rng: &mut StdRng| tokens.get(rng.random_range(0..tokens.len())).unwrap().to_string();
                    format!("{} {}", pick(rng), pick(rng))
                })
                .collect();
            let _ = metadata.add_metadata("tokenizer.ggml.merges", merges);
        }
        for key in
            ["tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"]
        {
            if rng.random_bool(0.6) {
                let _ = metadata.add_metadata(key, rng.random_range(0..n as u32 + 2));
            }
        }
        let pre = ["llama3", "qwen2", "smollm", "default", "nonsense"][rng.random_range(0..5)];
        let _ = metadata.add_metadata("tokenizer.ggml.pre", pre);
        let Ok(gguf) = GgufFile::from_bytes(metadata.to_bytes().unwrap()) else { return };
        let Ok(spec) = TokenizerSpec::from_gguf(&gguf) else { return };
        let Ok(tokenizer) = Tokenizer::from_spec(&spec) else { return };
        let text = random_text(rng, 40);
        if let Ok(ids) = tokenizer.encode(&text, false) {
            let _ = tokenizer.decode(&ids);
        }
    });
}

const TEMPLATE_PARTS: &[&str] = &[
    "{{ bos_token }}",
    "{% for message in messages %}{{ message.role }}: {{ message.content | trim }}\n{% endfor %}",
    "{% for i in range(100000) %}",
    "{% for j in range(1000) %}{{ j }}",
    "{% endfor %}",
    "{% if add_generation_prompt %}assistant:{% endif %}",
    "{% set ns = namespace(s='') %}",
    "{% set ns.s = ns.s ~ 'ab' %}",
    "{{ 'x' * 1000 }}",
    "{{ raise_exception('no') }}",
    "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(10000) }}",
    "{{ messages | tojson }}",
    "{{ messages[0].content.split(' ') | join(',') }}",
    "{% if messages[0].role == 'system' %}{{ messages[0].content }}{% endif %}",
    "{{ eos_token }}",
    "{{",
    "}}",
    "{%",
    "%}",
    "{# #}",
    "plain text ",
];

#[test]
fn generated_chat_templates() {
    let tokenizer = {
        let gguf = GgufFile::from_bytes(fixture_bytes("llama3")).unwrap();
        Tokenizer::from_gguf(&gguf).unwrap()
    };
    fuzz("generated chat templates", |rng| {
        let source: String = (0..rng.random_range(0..12))
            .map(|_| TEMPLATE_PARTS[rng.random_range(0..TEMPLATE_PARTS.len())])
            .collect();
        let Ok(template) = ChatTemplate::from_source(&source, &tokenizer) else { return };
        let messages: Vec<ChatMessage> = (0..rng.random_range(0..5))
            .map(|i| match i % 3 {
                0 => ChatMessage::user(random_text(rng, 20)),
                1 => ChatMessage::assistant(random_text(rng, 20)),
                _ => ChatMessage::system(random_text(rng, 20)),
            })
            .collect();
        let _ = template.render(&messages, rng.random());
    });
}
