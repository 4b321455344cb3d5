//! Real tokenizers against Hugging Face: Llama 3.1, Qwen 3, Gemma 3 and gpt-oss vocabularies, rebuilt by
//! the engine from vocabulary-only GGUF files (`tests/data/hf_tokenizers/vocab.zip`), must give the ids
//! the `tokenizers` library gives on the original tokenizer.json for 50 strings each (special tokens,
//! emoji, code, CJK, whitespace runs, numbers), render the GGUF's chat template exactly as transformers
//! renders tokenizer_config.json's, and stop generation at the family's end-of-turn tokens.
//!
//! References are made by `tools/hf_fixtures/make_tokenizer_refs.py`.

mod support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use doppler_engine::gguf::GgufFile;
use doppler_engine::tokenizer::{ChatMessage, ChatTemplate, Role, Tokenizer};
use serde::Deserialize;
use support::models::fixtures_dir;

#[derive(Deserialize)]
struct Reference {
    gguf: String,
    add_bos: bool,
    bos_id: Option<u32>,
    end_of_turn: BTreeMap<String, u32>,
    cases: Vec<Case>,
    chat: Vec<ChatCase>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
}

#[derive(Deserialize)]
struct ChatCase {
    messages: Vec<Message>,
    add_generation_prompt: bool,
    rendered: String,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hf_tokenizers")
}

fn load(family: &str) -> (Reference, GgufFile, Tokenizer) {
    let json_path = data_dir().join(format!("{family}.json"));
    let text = std::fs::read_to_string(&json_path).unwrap_or_else(|e| panic!("{}: {e}", json_path.display()));
    let reference: Reference = serde_json::from_str(&text).expect("a valid reference file");
    let zip_path = data_dir().join("vocab.zip");
    let file = std::fs::File::open(&zip_path).unwrap_or_else(|e| panic!("{}: {e}", zip_path.display()));
    let mut archive = zip::ZipArchive::new(file).expect("a readable vocab.zip");
    let mut bytes = Vec::new();
    archive
        .by_name(&reference.gguf)
        .expect("the reference's GGUF in vocab.zip")
        .read_to_end(&mut bytes)
        .expect("an uncompressed GGUF");
    let gguf = GgufFile::from_bytes(bytes).expect("a valid vocabulary GGUF");
    let tokenizer = Tokenizer::from_gguf(&gguf).expect("a tokenizer from the GGUF vocabulary");
    (reference, gguf, tokenizer)
}

fn check_ids(family: &str, reference: &Reference, tokenizer: &Tokenizer) {
    assert_eq!(reference.cases.len(), 50, "{family}: 50 strings");
    let mismatches: Vec<String> = reference
        .cases
        .iter()
        .filter_map(|case| {
            let ours = tokenizer.encode(&case.text, false).expect("encodable text");
            (ours != case.ids).then(|| format!("{:?}\n   ours {:?}\n     hf {:?}", case.text, ours, case.ids))
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{family}: {} strings differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!(tokenizer.add_bos(), reference.add_bos, "{family}: BOS rule");
    if reference.add_bos {
        assert_eq!(tokenizer.bos_id(), reference.bos_id, "{family}: BOS id");
    }
}

fn check_chat(family: &str, reference: &Reference, gguf: &GgufFile, tokenizer: &Tokenizer) {
    let template = ChatTemplate::for_model(gguf, tokenizer).expect("readable template metadata");
    for case in &reference.chat {
        let messages: Vec<ChatMessage> = case
            .messages
            .iter()
            .map(|m| ChatMessage::new(Role::from(m.role.as_str()), m.content.clone()))
            .collect();
        let ours = template.render(&messages, case.add_generation_prompt).expect("a rendered template");
        assert_eq!(ours, case.rendered, "{family}: chat template rendering");
    }
}

fn check_end_of_generation(family: &str, reference: &Reference, tokenizer: &Tokenizer) {
    assert!(!reference.end_of_turn.is_empty(), "{family}: the reference names end-of-turn tokens");
    let stops = tokenizer.end_of_generation_ids();
    for (text, id) in &reference.end_of_turn {
        assert_eq!(tokenizer.token_to_id(text), Some(*id), "{family}: {text}");
        assert!(stops.contains(id), "{family}: generation must stop at {text} ({id}); stops at {stops:?}");
    }
}

fn check_family(family: &str, expect_chat: bool) {
    let (reference, gguf, tokenizer) = load(family);
    check_ids(family, &reference, &tokenizer);
    assert_eq!(!reference.chat.is_empty(), expect_chat, "{family}: chat renderings present");
    check_chat(family, &reference, &gguf, &tokenizer);
    check_end_of_generation(family, &reference, &tokenizer);
}

#[test]
fn llama3_matches_hugging_face() {
    check_family("llama3", true);
}

#[test]
fn qwen3_matches_hugging_face() {
    check_family("qwen3", true);
}

#[test]
fn gemma3_matches_hugging_face() {
    check_family("gemma3", true);
}

/// The npm copy of gpt-oss's tokenizer_config.json carries no chat template: ids and stops only.
/// Harmony's `<|end|>` closes a message inside the answer (after the analysis channel), so it must
/// not stop generation.
#[test]
fn gpt_oss_matches_hugging_face() {
    check_family("gptoss", false);
    let (_, _, tokenizer) = load("gptoss");
    let end = tokenizer.token_to_id("<|end|>").expect("gpt-oss has <|end|>");
    assert!(!tokenizer.end_of_generation_ids().contains(&end), "<|end|> must not end a gpt-oss answer");
}

#[derive(Deserialize)]
struct FixtureReference {
    cases: Vec<FixtureCase>,
}

#[derive(Deserialize)]
struct FixtureCase {
    prompt: String,
    prompt_tokens: Vec<u32>,
}

/// The model fixtures of `tests/data/hf/` (trimmed vocabularies): the engine tokenizes their prompts
/// into the ids the reference fed the model (`tokenizers` on the fixture's tokenizer.json). Plain texts take the model's BOS rule; chat renderings
/// already hold their BOS text. The long case's prompt is a description, not its text. Not mistral:
/// its trimmed Llama 2 vocabulary has made-up SentencePiece scores (minus the id), which do not
/// reproduce tokenizer.json's merge order for runs of spaces.
#[test]
fn model_fixture_prompts_tokenize_as_for_the_reference() {
    let dir = fixtures_dir();
    for name in ["llama3", "qwen2", "qwen3", "phi3", "gemma3"] {
        let gguf = GgufFile::open(&dir.join(name).join("model.gguf")).expect("a fixture GGUF");
        let tokenizer = Tokenizer::from_gguf(&gguf).expect("a tokenizer from the fixture");
        let text =
            std::fs::read_to_string(dir.join(name).join("reference.json")).expect("a fixture reference");
        let reference: FixtureReference = serde_json::from_str(&text).expect("a valid fixture reference");
        let mut checked = 0;
        for case in reference.cases.iter().filter(|case| !case.prompt.starts_with("long text")) {
            let bos_text =
                tokenizer.bos_id().map(|id| tokenizer.token_bytes(id).to_vec()).unwrap_or_default();
            let template_wrote_bos = !bos_text.is_empty() && case.prompt.as_bytes().starts_with(&bos_text);
            let ours = tokenizer.encode(&case.prompt, tokenizer.add_bos() && !template_wrote_bos).unwrap();
            assert_eq!(ours, case.prompt_tokens, "{name}: {:?}", case.prompt);
            checked += 1;
        }
        assert_eq!(checked, 11, "{name}: short cases");
    }
}
