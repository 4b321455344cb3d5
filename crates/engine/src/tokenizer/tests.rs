//! Tokenizer, streaming decoder and chat template tests on small hand-made vocabularies.
//! The real models are checked against llama.cpp in `tests/tokenizer_reference.rs`.

use super::test_vocabularies::*;
use super::*;
use crate::gguf::{GgufFile, GgufWriter, MetadataValue, StringArray};

fn sentencepiece() -> Tokenizer {
    Tokenizer::from_spec(&sentencepiece_spec()).unwrap()
}

fn byte_level() -> Tokenizer {
    Tokenizer::from_spec(&byte_level_spec()).unwrap()
}

fn sp_byte(byte: u8) -> u32 {
    SP_FIRST_BYTE + u32::from(byte)
}

fn bl_byte(byte: u8) -> u32 {
    BL_FIRST_BYTE + u32::from(byte)
}

const ROUND_TRIP_TEXTS: [&str; 13] = [
    "",
    "hello world",
    "Hello, World! 123",
    "héllo wörld — naïve café",
    "emoji 🚀🔥 and family 👨‍👩‍👧",
    "日本語のテキスト 中文测试 Привет мир مرحبا",
    "def f(x):\n    return x * 2\n",
    "   leading and trailing   ",
    "\t\ttabs\r\nand CRLF",
    "<start_of_turn>user\nhi<end_of_turn>\n",
    "<|im_start|>system\nyou are<|im_end|>",
    "{\"json\": [1, 2]} https://example.com/?q=1&r=2",
    "zero\u{200B}width and \u{00A0}nbsp",
];

#[test]
fn sentencepiece_merges_by_score() {
    let tokenizer = sentencepiece();
    assert_eq!(tokenizer.encode("hello world", false).unwrap(), [sp_piece("hello"), sp_piece("▁world")]);
    assert_eq!(
        tokenizer.encode("hello world", true).unwrap(),
        [SP_BOS, sp_piece("hello"), sp_piece("▁world")]
    );
    assert_eq!(tokenizer.encode("", false).unwrap(), Vec::<u32>::new());
}

#[test]
fn sentencepiece_spells_unknown_characters_as_bytes() {
    let tokenizer = sentencepiece();
    assert_eq!(
        tokenizer.encode("hé🚀", false).unwrap(),
        [
            sp_piece("h"),
            sp_byte(0xC3),
            sp_byte(0xA9),
            sp_byte(0xF0),
            sp_byte(0x9F),
            sp_byte(0x9A),
            sp_byte(0x80)
        ]
    );
}

#[test]
fn sentencepiece_user_defined_whitespace_is_matched_before_normalization() {
    // As llama.cpp gives for Gemma: "Hello  world" → [Hello, "  ", world] with no '▁' on "world".
    let tokenizer = sentencepiece();
    assert_eq!(
        tokenizer.encode("hello  world", false).unwrap(),
        [sp_piece("hello"), SP_TWO_SPACES, sp_piece("w"), sp_piece("or"), sp_piece("ld")]
    );
    assert_eq!(tokenizer.encode("\n\n", false).unwrap(), [SP_NEWLINE, SP_NEWLINE]);
}

#[test]
fn special_tokens_match_whole_and_only_whole() {
    let tokenizer = sentencepiece();
    assert_eq!(
        tokenizer.encode("<start_of_turn>hello\n<end_of_turn>", false).unwrap(),
        [SP_START_OF_TURN, sp_piece("hello"), SP_NEWLINE, SP_END_OF_TURN]
    );
    let partial = tokenizer.encode("<start_of_turn", false).unwrap();
    assert!(!partial.contains(&SP_START_OF_TURN), "{partial:?}");
    assert_eq!(tokenizer.decode(&partial), "<start_of_turn");

    let tokenizer = byte_level();
    assert_eq!(
        tokenizer.encode("<|im_start|>hello<|im_end|>", false).unwrap(),
        [BL_IM_START, bl_merged("hello"), BL_IM_END]
    );
    assert_eq!(tokenizer.token_to_id("<|im_end|>"), Some(BL_IM_END));
}

#[test]
fn byte_level_pre_tokenizes_then_merges() {
    let tokenizer = byte_level();
    assert_eq!(tokenizer.encode("hello world", false).unwrap(), [bl_merged("hello"), bl_merged("Ġworld")]);
    // `smollm` splits every digit on its own, so "11" is never merged whatever the vocabulary.
    assert_eq!(tokenizer.encode("11", false).unwrap(), [bl_byte(b'1'), bl_byte(b'1')]);
    // Bytes of a non-ASCII character each map to one alphabet token.
    assert_eq!(tokenizer.encode("é", false).unwrap(), [bl_byte(0xC3), bl_byte(0xA9)]);
}

#[test]
fn a_byte_missing_from_the_vocabulary_blocks_merges_and_yields_nothing() {
    let mut spec = byte_level_spec();
    spec.tokens[bl_byte(0x1D) as usize] = "removed".into();
    let tokenizer = Tokenizer::from_spec(&spec).unwrap();
    // As llama.cpp: "h" and "e" are not merged across the byte, which itself has no token.
    assert_eq!(tokenizer.encode("h\u{1D}e", false).unwrap(), [bl_byte(b'h'), bl_byte(b'e')]);
    assert_eq!(tokenizer.encode("he", false).unwrap(), [bl_merged("he")]);
}

#[test]
fn decode_inverts_encode() {
    for tokenizer in [sentencepiece(), byte_level()] {
        for text in ROUND_TRIP_TEXTS {
            let ids = tokenizer.encode(text, false).unwrap();
            assert_eq!(tokenizer.decode(&ids), text, "ids {ids:?}");
        }
    }
}

#[test]
fn space_prefix_is_added_after_specials_and_removed_by_decode() {
    let mut spec = sentencepiece_spec();
    spec.add_space_prefix = true;
    let tokenizer = Tokenizer::from_spec(&spec).unwrap();
    assert_eq!(
        tokenizer.encode("hello world", false).unwrap(),
        [sp_piece("▁"), sp_piece("hello"), sp_piece("▁world")]
    );
    assert_eq!(
        tokenizer.encode("<start_of_turn>hello", false).unwrap(),
        [SP_START_OF_TURN, sp_piece("▁"), sp_piece("hello")]
    );
    for text in ["hello world", "é", "hello\tworld"] {
        assert_eq!(tokenizer.decode(&tokenizer.encode(text, true).unwrap()), format!("<bos>{text}"));
        assert_eq!(tokenizer.decode(&tokenizer.encode(text, false).unwrap()), text);
    }
}

#[test]
fn token_bytes_resolve_each_kind_of_token() {
    let tokenizer = sentencepiece();
    assert_eq!(tokenizer.token_bytes(sp_piece("▁world")), b" world");
    assert_eq!(tokenizer.token_bytes(sp_byte(0xC3)), [0xC3]);
    assert_eq!(tokenizer.token_bytes(SP_START_OF_TURN), b"<start_of_turn>");
    assert_eq!(tokenizer.token_bytes(SP_TWO_SPACES), b"  ");
    assert_eq!(tokenizer.token_bytes(u32::MAX), b"");
    let tokenizer = byte_level();
    assert_eq!(tokenizer.token_bytes(bl_merged("Ġworld")), b" world");
    assert_eq!(tokenizer.token_bytes(bl_byte(b'\n')), b"\n");
    assert_eq!(tokenizer.token_bytes(bl_byte(0xA9)), [0xA9]);
}

#[test]
fn stream_decoder_holds_back_split_characters() {
    let tokenizer = sentencepiece();
    let mut decoder = StreamDecoder::new(&tokenizer);
    assert_eq!(decoder.push(sp_piece("hello")), "hello");
    let rocket: Vec<String> = [0xF0, 0x9F, 0x9A, 0x80].map(|b| decoder.push(sp_byte(b))).into();
    assert_eq!(rocket, ["", "", "", "🚀"]);
    assert_eq!(decoder.push(sp_piece("▁world")), " world");
    assert_eq!(decoder.finish(), "");

    let tokenizer = byte_level();
    let mut decoder = StreamDecoder::new(&tokenizer);
    assert_eq!(decoder.push(bl_byte(0xC3)), "");
    assert_eq!(decoder.push(bl_byte(0xA9)), "é");
}

#[test]
fn stream_decoder_replaces_what_can_never_be_valid() {
    let tokenizer = sentencepiece();
    let mut decoder = StreamDecoder::new(&tokenizer);
    assert_eq!(decoder.push(sp_byte(0xFF)), "\u{FFFD}");
    assert_eq!(decoder.push(sp_byte(0xF0)), "");
    assert_eq!(decoder.push(sp_piece("h")), "\u{FFFD}h", "a lead byte followed by ASCII");
    assert_eq!(decoder.push(sp_byte(0xE6)), "");
    assert_eq!(decoder.push(sp_byte(0x97)), "");
    assert_eq!(decoder.finish(), "\u{FFFD}", "an unfinished character at the end");
    assert_eq!(decoder.finish(), "");
}

#[test]
fn stream_decoder_matches_decode_on_every_text() {
    for tokenizer in [sentencepiece(), byte_level()] {
        for text in ROUND_TRIP_TEXTS {
            let ids = tokenizer.encode(text, false).unwrap();
            let mut decoder = StreamDecoder::new(&tokenizer);
            let mut streamed: String = ids.iter().map(|&id| decoder.push(id)).collect();
            streamed += &decoder.finish();
            assert_eq!(streamed, text);
        }
    }
}

#[test]
fn end_of_generation_includes_eos_and_end_of_turn_tokens() {
    assert_eq!(sentencepiece().end_of_generation_ids(), [SP_EOS, SP_END_OF_TURN]);
    assert_eq!(byte_level().end_of_generation_ids(), [BL_END_OF_TEXT, BL_IM_END]);
    let mut spec = byte_level_spec();
    // A mistyped end-of-turn token still ends generation and still matches whole.
    spec.token_types[BL_IM_END as usize] = TokenType::Normal;
    let tokenizer = Tokenizer::from_spec(&spec).unwrap();
    assert_eq!(tokenizer.encode("o<|im_end|>", false).unwrap(), [bl_byte(b'o'), BL_IM_END]);
}

#[test]
fn accessors_report_the_spec() {
    let tokenizer = sentencepiece();
    assert_eq!(tokenizer.vocab_size(), sentencepiece_spec().tokens.len());
    assert_eq!(
        (tokenizer.bos_id(), tokenizer.eos_id(), tokenizer.add_bos()),
        (Some(SP_BOS), Some(SP_EOS), true)
    );
    assert_eq!(tokenizer.token_to_id("▁world"), Some(sp_piece("▁world")));
    assert_eq!(tokenizer.token_to_id("absent"), None);
    assert_eq!(tokenizer.token_type(SP_TWO_SPACES), Some(TokenType::UserDefined));
    assert!(!byte_level().add_bos());
}

fn gguf_from(spec: &TokenizerSpec, model_name: &str) -> GgufFile {
    let mut writer = GgufWriter::new();
    let mut add = |key: &str, value: MetadataValue| writer.add_metadata(key, value).unwrap();
    add("general.architecture", "test".into());
    add("tokenizer.ggml.model", model_name.into());
    if let Some(pre) = &spec.pre {
        add("tokenizer.ggml.pre", pre.as_str().into());
    }
    add("tokenizer.ggml.tokens", StringArray::from_iter(&spec.tokens).into());
    if !spec.scores.is_empty() {
        add("tokenizer.ggml.scores", spec.scores.clone().into());
    }
    let types: Vec<i32> = spec
        .token_types
        .iter()
        .map(|kind| match kind {
            TokenType::Normal => 1,
            TokenType::Control => 3,
            TokenType::UserDefined => 4,
            TokenType::Byte => 6,
            other => panic!("test vocabularies have no {other:?} tokens"),
        })
        .collect();
    add("tokenizer.ggml.token_type", types.into());
    if !spec.merges.is_empty() {
        add("tokenizer.ggml.merges", StringArray::from_iter(&spec.merges).into());
    }
    add("tokenizer.ggml.bos_token_id", spec.bos_id.unwrap().into());
    add("tokenizer.ggml.eos_token_id", spec.eos_id.unwrap().into());
    GgufFile::from_bytes(writer.to_bytes().unwrap()).unwrap()
}

#[test]
fn from_gguf_reads_the_vocabulary_and_applies_llama_cpp_defaults() {
    let gguf = gguf_from(&sentencepiece_spec(), "llama");
    let spec = TokenizerSpec::from_gguf(&gguf).unwrap();
    assert_eq!(spec.model, TokenizerModel::SentencePiece);
    assert_eq!(spec.token_types, sentencepiece_spec().token_types);
    assert!(spec.add_bos && spec.add_space_prefix, "SentencePiece defaults");
    let tokenizer = Tokenizer::from_gguf(&gguf).unwrap();
    assert_eq!(
        tokenizer.encode("hello world", true).unwrap(),
        [SP_BOS, sp_piece("▁"), sp_piece("hello"), sp_piece("▁world")]
    );

    let gguf = gguf_from(&byte_level_spec(), "gpt2");
    let spec = TokenizerSpec::from_gguf(&gguf).unwrap();
    assert_eq!(spec.merges.len(), 9);
    assert!(!spec.add_bos && !spec.add_space_prefix, "byte-level BPE defaults");
    let tokenizer = Tokenizer::from_gguf(&gguf).unwrap();
    assert_eq!(tokenizer.encode("hello world", false).unwrap(), [bl_merged("hello"), bl_merged("Ġworld")]);
}

#[test]
fn unknown_tokenizer_models_are_refused() {
    let gguf = gguf_from(&sentencepiece_spec(), "bert");
    let err = Tokenizer::from_gguf(&gguf).unwrap_err();
    assert!(matches!(&err, TokenizerError::UnsupportedModel(name) if name == "bert"), "{err}");
    assert!(err.to_string().contains("'bert' is not supported"), "{err}");
}

#[test]
fn unknown_pre_tokenizers_are_refused() {
    let mut spec = byte_level_spec();
    spec.pre = Some("mystery".into());
    let err = Tokenizer::from_spec(&spec).unwrap_err();
    assert!(matches!(&err, TokenizerError::UnsupportedPreTokenizer(name) if name == "mystery"), "{err}");
}

#[test]
fn inconsistent_specs_are_refused() {
    let mut spec = sentencepiece_spec();
    spec.scores.pop();
    assert!(matches!(
        Tokenizer::from_spec(&spec).unwrap_err(),
        TokenizerError::LengthMismatch { key: "tokenizer.ggml.scores", .. }
    ));
    let mut spec = sentencepiece_spec();
    spec.eos_id = Some(spec.tokens.len() as u32);
    assert!(matches!(
        Tokenizer::from_spec(&spec).unwrap_err(),
        TokenizerError::TokenIdOutOfRange { key: "tokenizer.ggml.eos_token_id", .. }
    ));
    let mut spec = sentencepiece_spec();
    spec.bos_id = None;
    assert!(matches!(Tokenizer::from_spec(&spec).unwrap_err(), TokenizerError::MissingBos));
    spec.add_bos = false;
    let tokenizer = Tokenizer::from_spec(&spec).unwrap();
    assert!(matches!(tokenizer.encode("x", true).unwrap_err(), TokenizerError::MissingBos));
    let mut spec = sentencepiece_spec();
    spec.tokens.clear();
    assert!(matches!(Tokenizer::from_spec(&spec).unwrap_err(), TokenizerError::EmptyVocabulary));
}

#[test]
fn malformed_merges_are_left_out() {
    let mut spec = byte_level_spec();
    spec.merges.insert(0, "nospace".into());
    spec.merges.insert(0, "h unknown".into());
    let tokenizer = Tokenizer::from_spec(&spec).unwrap();
    assert_eq!(tokenizer.encode("hello", false).unwrap(), [bl_merged("hello")]);
}

// ---- chat templates ----

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("Be brief."),
        ChatMessage::user(" Hi there \n"),
        ChatMessage::assistant("Hello!"),
        ChatMessage::user("Bye"),
    ]
}

#[test]
fn gemma_template_folds_the_system_prompt_into_the_first_user_turn() {
    let template = ChatTemplate::builtin(BuiltinTemplate::Gemma, &sentencepiece());
    assert_eq!(
        template.render(&conversation(), true).unwrap(),
        "<bos><start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n\
         <start_of_turn>model\nHello!<end_of_turn>\n\
         <start_of_turn>user\nBye<end_of_turn>\n\
         <start_of_turn>model\n"
    );
    assert_eq!(
        template.render(&[ChatMessage::user("Hi")], false).unwrap(),
        "<bos><start_of_turn>user\nHi<end_of_turn>\n"
    );
}

#[test]
fn gemma_template_refuses_turns_out_of_order() {
    let template = ChatTemplate::builtin(BuiltinTemplate::Gemma, &sentencepiece());
    let err = template.render(&[ChatMessage::user("a"), ChatMessage::user("b")], true).unwrap_err();
    assert!(matches!(err, TemplateError::Render(_)));
    assert!(err.to_string().contains("alternate user and assistant"), "{err}");
}

#[test]
fn chat_ml_template_renders_every_role() {
    let template = ChatTemplate::builtin(BuiltinTemplate::ChatMl, &byte_level());
    assert_eq!(
        template.render(&conversation()[..2], true).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi there \n<|im_end|>\n<|im_start|>assistant\n"
    );
}

fn llama3_like() -> Tokenizer {
    let mut spec = byte_level_spec();
    spec.tokens[BL_IM_START as usize] = "<|begin_of_text|>".into();
    spec.tokens[BL_IM_END as usize] = "<|eot_id|>".into();
    for header in ["<|start_header_id|>", "<|end_header_id|>"] {
        spec.tokens.push(header.into());
        spec.token_types.push(TokenType::Control);
    }
    spec.add_bos = true;
    Tokenizer::from_spec(&spec).unwrap()
}

#[test]
fn llama3_template_renders_headers() {
    let template = ChatTemplate::builtin(BuiltinTemplate::Llama3, &llama3_like());
    assert_eq!(
        template.render(&conversation()[..2], true).unwrap(),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
}

#[test]
fn builtin_format_is_chosen_by_architecture_then_vocabulary() {
    let origin =
        |architecture, tokenizer: &Tokenizer| ChatTemplate::select(architecture, None, tokenizer).origin();
    assert_eq!(origin("gemma3", &sentencepiece()), TemplateOrigin::Builtin(BuiltinTemplate::Gemma));
    assert_eq!(origin("llama", &byte_level()), TemplateOrigin::Builtin(BuiltinTemplate::ChatMl));
    assert_eq!(origin("llama", &llama3_like()), TemplateOrigin::Builtin(BuiltinTemplate::Llama3));
    let missing = ChatTemplate::select("llama", None, &sentencepiece());
    assert_eq!(missing.origin(), TemplateOrigin::Missing);
    let err = missing.render(&[ChatMessage::user("hi")], true).unwrap_err();
    assert!(matches!(err, TemplateError::NoTemplate { .. }), "{err}");
    assert!(err.to_string().contains("has no chat template"), "{err}");
    assert!(err.to_string().contains("architecture 'llama'"), "{err}");
    let own = ChatTemplate::select("gemma3", Some("{{ bos_token }}"), &sentencepiece());
    assert_eq!(own.origin(), TemplateOrigin::Model);
}

#[test]
fn a_model_template_that_does_not_compile_falls_back() {
    let broken = Some("{% for %}");
    let fallback = ChatTemplate::select("gemma3", broken, &sentencepiece());
    assert_eq!(fallback.origin(), TemplateOrigin::Builtin(BuiltinTemplate::Gemma));
    let missing = ChatTemplate::select("llama", broken, &sentencepiece());
    assert_eq!(missing.origin(), TemplateOrigin::Missing);
    let err = missing.render(&[ChatMessage::user("hi")], true).unwrap_err();
    assert!(err.to_string().contains("does not compile"), "{err}");
}

/// A ChatML template in the style models ship: dict-style access, `+` concatenation, a default
/// system prompt when the conversation has none.
const MODEL_STYLE_TEMPLATE: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a test.<|im_end|>\n' }}{% endif %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

#[test]
fn model_templates_render_like_jinja2() {
    let template = ChatTemplate::select("llama", Some(MODEL_STYLE_TEMPLATE), &byte_level());
    assert_eq!(
        template.render(&[ChatMessage::user("Hi")], true).unwrap(),
        "<|im_start|>system\nYou are a test.<|im_end|>\n\
         <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    // Python string methods, as real templates use them, and trim_blocks/lstrip_blocks.
    let source = "{% for m in messages %}\n  {% if m.content.startswith('x') %}\n{{ m.content.strip().upper() }}|{{ eos_token }}\n  {% endif %}\n{% endfor %}";
    let template = ChatTemplate::from_source(source, &byte_level()).unwrap();
    assert_eq!(
        template.render(&[ChatMessage::user(" no"), ChatMessage::user("xy  ")], false).unwrap(),
        "XY|<|im_end|>\n"
    );
}

#[test]
fn template_errors_are_reported() {
    let err = ChatTemplate::from_source("{% for %}", &byte_level()).unwrap_err();
    assert!(matches!(err, TemplateError::Syntax(_)), "{err}");
    let template =
        ChatTemplate::from_source("{{ raise_exception('no tools here') }}", &byte_level()).unwrap();
    let err = template.render(&[], true).unwrap_err();
    assert!(err.to_string().contains("no tools here"), "{err}");
}

#[test]
fn encode_chat_never_doubles_bos() {
    let tokenizer = sentencepiece();
    let gemma = ChatTemplate::builtin(BuiltinTemplate::Gemma, &tokenizer);
    let ids = encode_chat(&tokenizer, &gemma, &[ChatMessage::user("hello")]).unwrap();
    assert_eq!(
        ids,
        [
            SP_BOS,
            SP_START_OF_TURN,
            sp_byte(b'u'),
            sp_byte(b's'),
            sp_piece("e"),
            sp_piece("r"),
            SP_NEWLINE,
            sp_piece("hello"),
            SP_END_OF_TURN,
            SP_NEWLINE,
            SP_START_OF_TURN,
            sp_byte(b'm'),
            sp_piece("o"),
            sp_piece("d"),
            sp_piece("e"),
            sp_piece("l"),
            SP_NEWLINE
        ]
    );
    // A template that does not write BOS gets it from the model's rule.
    let plain = ChatTemplate::from_source("{{ messages[0].content }}", &tokenizer).unwrap();
    assert_eq!(
        encode_chat(&tokenizer, &plain, &[ChatMessage::user("hello")]).unwrap(),
        [SP_BOS, sp_piece("hello")]
    );
    // Like SmolLM2: BOS is `<|im_start|>`, which the template writes and the rule does not add.
    let tokenizer = byte_level();
    let chat_ml = ChatTemplate::select("llama", Some(MODEL_STYLE_TEMPLATE), &tokenizer);
    let ids = encode_chat(&tokenizer, &chat_ml, &[ChatMessage::user("hello")]).unwrap();
    assert_eq!(ids[0], BL_IM_START);
    assert_ne!(ids[1], BL_IM_START);
}

#[test]
fn tokenizer_and_templates_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tokenizer>();
    assert_send_sync::<ChatTemplate>();
    assert_send_sync::<StreamDecoder>();
}

#[test]
fn long_conversations_render_within_the_fuel_and_output_limits() {
    let messages: Vec<ChatMessage> = (0..2_000)
        .map(|i| match i % 2 {
            0 => ChatMessage::user("question ".repeat(100)),
            _ => ChatMessage::assistant("answer ".repeat(100)),
        })
        .collect();
    for builtin in [BuiltinTemplate::Gemma, BuiltinTemplate::ChatMl, BuiltinTemplate::Llama3] {
        let text = ChatTemplate::builtin(builtin, &sentencepiece()).render(&messages, true).unwrap();
        assert!(text.len() > 1_600_000, "{builtin:?}: {}", text.len());
    }
}

#[test]
fn templates_asking_for_too_much_stop_with_errors_naming_it() {
    let messages = [ChatMessage::user("hi")];
    let looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    let err = ChatTemplate::from_source(looping, &byte_level()).unwrap().render(&messages, true).unwrap_err();
    assert!(matches!(err, TemplateError::OutOfFuel { fuel: 110_000 }), "{err}");

    let exploding = "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}";
    let err =
        ChatTemplate::from_source(exploding, &byte_level()).unwrap().render(&messages, true).unwrap_err();
    assert!(matches!(err, TemplateError::OutputTooLarge { input_bytes: 6, .. }), "{err}");

    let huge = "x".repeat(limits::MAX_TEMPLATE_BYTES + 1);
    let err = ChatTemplate::from_source(&huge, &byte_level()).unwrap_err();
    assert!(matches!(err, TemplateError::TooLarge { .. }), "{err}");
    assert!(err.is_resource_limit());
}
