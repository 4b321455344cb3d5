//! Both default models' tokenizers against llama.cpp's ids (`../shared/reference`): every
//! reference string without BOS, every reference prompt with the model's BOS rule; then
//! round trips, streaming and chat prompts on the real vocabularies.
//!
//! Models come from `DOPPLER_TEST_MODELS_DIR` (a missing one fails the test unless
//! `DOPPLER_ALLOW_MISSING_MODELS=1`); the reference from `DOPPLER_REFERENCE_DIR`, by default
//! `shared/reference` beside the repository.

use std::path::{Path, PathBuf};
use std::time::Instant;

use doppler_engine::gguf::GgufFile;
use doppler_engine::tokenizer::{
    encode_chat, BuiltinTemplate, ChatMessage, ChatTemplate, StreamDecoder, TemplateOrigin,
    Tokenizer,
};
use serde::Deserialize;

const GEMMA_FILE: &str = "gemma-3-270m-q4_k_m.gguf";
const GEMMA_REFERENCE: &str = "gemma-3-270m-q4_k_m";
const SMOLLM2_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const SMOLLM2_REFERENCE: &str = "smollm2-135m-instruct-q4_1";

#[derive(Deserialize)]
struct StringCases {
    cases: Vec<StringCase>,
}

#[derive(Deserialize)]
struct StringCase {
    text: String,
    ids: Vec<u32>,
}

#[derive(Deserialize)]
struct PromptCases {
    cases: Vec<PromptCase>,
}

#[derive(Deserialize)]
struct PromptCase {
    prompt: String,
    prompt_tokens: Vec<u32>,
}

fn reference_dir() -> PathBuf {
    match std::env::var_os("DOPPLER_REFERENCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference"),
    }
}

fn read_reference<T: for<'de> Deserialize<'de>>(file_name: &str) -> T {
    let path = reference_dir().join(file_name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "reading {}: {e} (set DOPPLER_REFERENCE_DIR)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The model's GGUF file, or `None` when it is missing and `DOPPLER_ALLOW_MISSING_MODELS=1`.
fn open_model(file_name: &str) -> Option<GgufFile> {
    let allow_missing = std::env::var("DOPPLER_ALLOW_MISSING_MODELS").as_deref() == Ok("1");
    let path =
        std::env::var_os("DOPPLER_TEST_MODELS_DIR").map(|dir| PathBuf::from(dir).join(file_name));
    match path {
        Some(path) if path.is_file() => Some(GgufFile::open(&path).expect("a readable GGUF file")),
        _ if allow_missing => {
            eprintln!("skipping: {file_name} not found in DOPPLER_TEST_MODELS_DIR (DOPPLER_ALLOW_MISSING_MODELS=1)");
            None
        }
        Some(path) => panic!(
            "{} does not exist: set DOPPLER_TEST_MODELS_DIR to a directory holding {GEMMA_FILE} and {SMOLLM2_FILE} \
             (e.g. after `doppler models fetch-defaults`), or DOPPLER_ALLOW_MISSING_MODELS=1 to skip",
            path.display()
        ),
        None => panic!(
            "DOPPLER_TEST_MODELS_DIR is not set: point it at a directory holding {GEMMA_FILE} and {SMOLLM2_FILE}, \
             or set DOPPLER_ALLOW_MISSING_MODELS=1 to skip"
        ),
    }
}

fn load_tokenizer(gguf: &GgufFile) -> Tokenizer {
    let started = Instant::now();
    let tokenizer = Tokenizer::from_gguf(gguf).expect("a tokenizer from the GGUF vocabulary");
    eprintln!(
        "{}: tokenizer of {} tokens built in {:.2?}",
        gguf.source(),
        tokenizer.vocab_size(),
        started.elapsed()
    );
    tokenizer
}

/// Every reference string (no BOS) and every reference prompt (the model's BOS rule) must give
/// llama.cpp's ids; all mismatches are listed before failing.
fn check_against_llama_cpp(tokenizer: &Tokenizer, reference: &str, expect_add_bos: bool) {
    assert_eq!(tokenizer.add_bos(), expect_add_bos, "the model's BOS rule");
    let strings: StringCases = read_reference(&format!("{reference}.tokenizer.json"));
    let prompts: PromptCases = read_reference(&format!("{reference}.json"));
    assert!(
        !strings.cases.is_empty() && !prompts.cases.is_empty(),
        "empty reference"
    );
    let cases = strings
        .cases
        .iter()
        .map(|case| (case.text.as_str(), false, case.ids.as_slice()))
        .chain(prompts.cases.iter().map(|case| {
            (
                case.prompt.as_str(),
                tokenizer.add_bos(),
                case.prompt_tokens.as_slice(),
            )
        }));
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for (text, add_bos, expected) in cases {
        checked += 1;
        let actual = tokenizer.encode(text, add_bos).expect("encoding");
        if actual != expected {
            mismatches.push(format!(
                "text {text:?} (add_bos {add_bos})\n  expected {expected:?}\n  actual   {actual:?}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{reference}: {} of {checked} cases differ from llama.cpp:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// decode inverts encode on the reference strings, and streaming gives the same text.
fn check_round_trips(tokenizer: &Tokenizer, reference: &str) {
    let strings: StringCases = read_reference(&format!("{reference}.tokenizer.json"));
    let extra = [
        "code:\n\tfn main() { println!(\"{}\", 1 + 1); }\n",
        "mixed 😀 家族 👩🏽‍💻 ✓ ∑ ≠ ½",
    ];
    for text in strings
        .cases
        .iter()
        .map(|case| case.text.as_str())
        .chain(extra)
    {
        let ids = tokenizer.encode(text, false).unwrap();
        assert_eq!(tokenizer.decode(&ids), text, "{reference}: ids {ids:?}");
        let mut decoder = StreamDecoder::new(tokenizer);
        let mut streamed: String = ids.iter().map(|&id| decoder.push(id)).collect();
        streamed += &decoder.finish();
        assert_eq!(streamed, text, "{reference}: streamed ids {ids:?}");
    }
}

#[test]
fn gemma3_tokenizer_matches_llama_cpp() {
    let Some(gguf) = open_model(GEMMA_FILE) else {
        return;
    };
    let tokenizer = load_tokenizer(&gguf);
    check_against_llama_cpp(&tokenizer, GEMMA_REFERENCE, true);
    check_round_trips(&tokenizer, GEMMA_REFERENCE);

    let end_of_turn = tokenizer
        .token_to_id("<end_of_turn>")
        .expect("Gemma's end-of-turn token");
    assert_eq!(end_of_turn, 106);
    assert!(tokenizer.end_of_generation_ids().contains(&end_of_turn));
    assert!(tokenizer
        .end_of_generation_ids()
        .contains(&tokenizer.eos_id().unwrap()));

    // An emoji Gemma spells with byte-fallback tokens streams out whole.
    let ids = tokenizer.encode("🫨", false).unwrap();
    assert!(ids.len() > 1, "expected byte tokens, got {ids:?}");
    let mut decoder = StreamDecoder::new(&tokenizer);
    let pieces: Vec<String> = ids.iter().map(|&id| decoder.push(id)).collect();
    assert!(
        pieces[..pieces.len() - 1].iter().all(String::is_empty),
        "{pieces:?}"
    );
    assert_eq!(pieces.last().unwrap(), "🫨");

    let template = ChatTemplate::for_model(&gguf, &tokenizer).unwrap();
    assert_eq!(
        template.origin(),
        TemplateOrigin::Builtin(BuiltinTemplate::Gemma)
    );
    let messages = [
        ChatMessage::system("Answer briefly."),
        ChatMessage::user("What is the capital of France?"),
    ];
    let ids = encode_chat(&tokenizer, &template, &messages).unwrap();
    let start_of_turn = tokenizer.token_to_id("<start_of_turn>").unwrap();
    assert_eq!(
        ids[..2],
        [tokenizer.bos_id().unwrap(), start_of_turn],
        "exactly one BOS, then the user turn"
    );
    assert_eq!(
        tokenizer.decode(&ids),
        "<bos><start_of_turn>user\nAnswer briefly.\n\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n"
    );
}

#[test]
fn smollm2_tokenizer_matches_llama_cpp() {
    let Some(gguf) = open_model(SMOLLM2_FILE) else {
        return;
    };
    let tokenizer = load_tokenizer(&gguf);
    check_against_llama_cpp(&tokenizer, SMOLLM2_REFERENCE, false);
    check_round_trips(&tokenizer, SMOLLM2_REFERENCE);

    let im_end = tokenizer.token_to_id("<|im_end|>").unwrap();
    assert!(tokenizer.end_of_generation_ids().contains(&im_end));

    let template = ChatTemplate::for_model(&gguf, &tokenizer).unwrap();
    assert_eq!(template.origin(), TemplateOrigin::Model);
    let ids = encode_chat(&tokenizer, &template, &[ChatMessage::user("Hi")]).unwrap();
    assert_eq!(
        tokenizer.decode(&ids),
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    let im_start = tokenizer.token_to_id("<|im_start|>").unwrap();
    assert_eq!(
        ids.iter().filter(|&&id| id == im_start).count(),
        3,
        "{ids:?}"
    );
}
