//! Both default models' tokenizers against llama.cpp's ids (`../shared/reference`): every
//! reference string without BOS, every reference prompt with the model's BOS rule; then
//! round trips, streaming and chat prompts on the real vocabularies.
//!
//! Models come from `DOPPLER_TEST_MODELS_DIR` (a missing one fails the test unless
//! `DOPPLER_ALLOW_MISSING_MODELS=1`); the reference from `DOPPLER_REFERENCE_DIR`, by default
//! `shared/reference` beside the repository.

mod support;

use std::time::Instant;

use doppler_engine::gguf::GgufFile;
use doppler_engine::tokenizer::{
    encode_chat, BuiltinTemplate, ChatMessage, ChatTemplate, StreamDecoder, TemplateOrigin, Tokenizer,
};
use serde::Deserialize;
use support::models::{model_path, read_reference, GEMMA, SMOLLM2};

const GEMMA_REFERENCE: &str = "gemma-3-270m-q4_k_m";
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

/// The model's GGUF file, or `None` when it is missing and `DOPPLER_ALLOW_MISSING_MODELS=1`.
fn open_model(file_name: &str) -> Option<GgufFile> {
    Some(GgufFile::open(&model_path(file_name)?).expect("a readable GGUF file"))
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

/// Edge cases found by fuzzing both tokenizers against llama.cpp (llama-cpp-python 0.3.36,
/// `tokenize(text, add_bos=False, special=True)`): control characters SmolLM2 has no byte token
/// for, a literal '▁', long whitespace runs, Unicode whitespace, partial and nested special
/// tokens, HTML tags Gemma keeps whole, combining marks and emoji sequences.
/// Columns: text, Gemma 3 ids, SmolLM2 ids.
#[rustfmt::skip]
const LLAMA_CPP_EDGE_CASES: &[(&str, &[u32], &[u32])] = &[
    ("}\u{1D}$", &[236783,267,236795], &[109,20]),
    (" \u{14}🇵 h\u{13}e", &[236743,255321,245707,534,252295,236744], &[216,10813,225,130,294,85]),
    ("▁▁", &[236743,236743], &[11007,219,11007,219]),
    ("a▁ b ▁▁ c", &[236746,236743,518,236743,236743,236743,505], &[81,11007,219,278,29566,219,11007,219,265]),
    ("                                        ", &[167,145], &[12427,353]),
    ("\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n", &[137,110], &[22342,22342,22342,22342,22342,22342,22342,22342,16506]),
    ("\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t", &[255998,255969], &[13591,13591,13591,13591,197]),
    ("a                                 b", &[236746,167,138,236763], &[81,12427,278]),
    ("<0x41><0x0A>", &[236820,236771,236781,236812,236770,1798,236771,236781,236771,236776,236813], &[44,32,104,36,33,21198,32,104,32,49,46]),
    ("<start_of_turn", &[236820,3041,236779,1340,236779,887], &[44,3738,79,1714,79,20589]),
    ("<<bos>>", &[236820,2,236813], &[33691,34761,7791]),
    ("<unused12><mask>[multimodal]", &[18,4,5], &[44,419,3447,33,34,21198,8836,46,75,10593,306,32058,77]),
    ("<table><b>bold</b>", &[168,200,15640,209], &[44,6413,21198,82,46,30471,9617,82,46]),
    ("\u{2028}\u{2029}\u{85}\u{B}\u{C} text", &[464,366,406,464,366,407,432,371,249,250,1816], &[321,118,321,119,141,223,199,200,1694]),
    ("\u{A0}\u{3000}\u{205F}\u{200B}\u{FEFF}", &[432,398,465,366,366,464,367,397,237141,237922], &[15442,12109,218,32571,249,321,229,186,136,140]),
    ("don't I'M you'RE 'll o'clock", &[13246,236789,236745,564,236789,236792,611,236789,1357,756,859,512,236789,15868], &[12420,982,339,23,61,346,23,3256,637,764,263,23,17466]),
    ("x²½Ⅻ٣१२ 12345", &[236781,238131,238612,464,371,409,242044,238456,238647,236743,236770,236778,236800,236812,236810], &[104,19133,16738,173,223,121,164,113,9310,117,9310,118,216,33,34,35,36,37]),
    ("e\u{301} ก่ ड़ 𝔘𝔫𝔦", &[236744,238288,5363,237045,2331,237063,236743,478,395,386,390,478,395,386,409,254865], &[85,151,219,216,10283,219,31933,226,12335,111,4300,137,216,23159,238,242,23159,238,121,23159,238,116]),
    ("👩🏿\u{200D}🔬🏳\u{FE0F}\u{200D}🌈1\u{FE0F}⃣🇯🇵", &[243767,245445,237243,249689,248177,238178,237243,243712,236770,196645,247994,245707], &[10813,235,119,10813,233,140,321,231,10813,238,122,10813,233,128,31752,321,231,10813,230,226,33,31752,173,221,113,10813,225,124,10813,225,130]),
    ("\r\n\r\n  \n \n", &[251,107,251,107,138,107,236743,107], &[18682,32057,3717]),
    ("   \n\n   end  \n", &[139,108,139,643,138,107], &[333,39892,1112,32057]),
    ("<|im_start|><|im_end|><|endoftext|>", &[236820,236909,548,236779,3041,236909,1798,236909,548,236779,643,236909,1798,236909,643,1340,1005,111038], &[1,2,0]),
    ("ÿþýÀÁ\u{AD}", &[243493,238453,237274,238974,238291,238135], &[142,140,142,139,47546,142,218,142,219,141,251]),
    ("x=}\u{15};$\u{7} \u{1680}", &[236781,150889,259,138523,245,236743,463,392,366], &[104,45,109,207,43,20,195,15822,244,218]),
];

/// Which column of [`LLAMA_CPP_EDGE_CASES`] holds a model's ids.
#[derive(Clone, Copy)]
enum Model {
    Gemma3,
    SmolLm2,
}

/// Every reference string and edge case (no BOS) and every reference prompt (the model's BOS
/// rule) must give llama.cpp's ids; all mismatches are listed before failing.
fn check_against_llama_cpp(tokenizer: &Tokenizer, reference: &str, model: Model, expect_add_bos: bool) {
    assert_eq!(tokenizer.add_bos(), expect_add_bos, "the model's BOS rule");
    let strings: StringCases = read_reference(&format!("{reference}.tokenizer.json"));
    let prompts: PromptCases = read_reference(&format!("{reference}.json"));
    assert!(!strings.cases.is_empty() && !prompts.cases.is_empty(), "empty reference");
    let cases = strings
        .cases
        .iter()
        .map(|case| (case.text.as_str(), false, case.ids.as_slice()))
        .chain(
            prompts
                .cases
                .iter()
                .map(|case| (case.prompt.as_str(), tokenizer.add_bos(), case.prompt_tokens.as_slice())),
        )
        .chain(LLAMA_CPP_EDGE_CASES.iter().map(|&(text, gemma, smollm2)| {
            let ids = match model {
                Model::Gemma3 => gemma,
                Model::SmolLm2 => smollm2,
            };
            (text, false, ids)
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
    let extra = ["code:\n\tfn main() { println!(\"{}\", 1 + 1); }\n", "mixed 😀 家族 👩🏽‍💻 ✓ ∑ ≠ ½"];
    for text in strings.cases.iter().map(|case| case.text.as_str()).chain(extra) {
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
    let Some(gguf) = open_model(GEMMA) else {
        return;
    };
    let tokenizer = load_tokenizer(&gguf);
    check_against_llama_cpp(&tokenizer, GEMMA_REFERENCE, Model::Gemma3, true);
    check_round_trips(&tokenizer, GEMMA_REFERENCE);

    let end_of_turn = tokenizer.token_to_id("<end_of_turn>").expect("Gemma's end-of-turn token");
    assert_eq!(end_of_turn, 106);
    assert!(tokenizer.end_of_generation_ids().contains(&end_of_turn));
    assert!(tokenizer.end_of_generation_ids().contains(&tokenizer.eos_id().unwrap()));

    // An emoji Gemma spells with byte-fallback tokens streams out whole.
    let ids = tokenizer.encode("🫨", false).unwrap();
    assert!(ids.len() > 1, "expected byte tokens, got {ids:?}");
    let mut decoder = StreamDecoder::new(&tokenizer);
    let pieces: Vec<String> = ids.iter().map(|&id| decoder.push(id)).collect();
    assert!(pieces[..pieces.len() - 1].iter().all(String::is_empty), "{pieces:?}");
    assert_eq!(pieces.last().unwrap(), "🫨");

    let template = ChatTemplate::for_model(&gguf, &tokenizer).unwrap();
    assert_eq!(template.origin(), TemplateOrigin::Builtin(BuiltinTemplate::Gemma));
    let messages =
        [ChatMessage::system("Answer briefly."), ChatMessage::user("What is the capital of France?")];
    let ids = encode_chat(&tokenizer, &template, &messages).unwrap();
    let start_of_turn = tokenizer.token_to_id("<start_of_turn>").unwrap();
    assert_eq!(ids[..2], [tokenizer.bos_id().unwrap(), start_of_turn], "exactly one BOS, then the user turn");
    assert_eq!(
        tokenizer.decode(&ids),
        "<bos><start_of_turn>user\nAnswer briefly.\n\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n"
    );
}

#[test]
fn smollm2_tokenizer_matches_llama_cpp() {
    let Some(gguf) = open_model(SMOLLM2) else {
        return;
    };
    let tokenizer = load_tokenizer(&gguf);
    check_against_llama_cpp(&tokenizer, SMOLLM2_REFERENCE, Model::SmolLm2, false);
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
    assert_eq!(ids.iter().filter(|&&id| id == im_start).count(), 3, "{ids:?}");
}
