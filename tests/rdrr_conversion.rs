//! RDRR made by the converters, loaded by the engine: an RDRR converted from a GGUF gives
//! that GGUF's logits bit for bit (same types, same bytes, same kernels), for every tiny
//! architecture fixture and for SmolLM2 135M on one short prompt; one converted from a
//! safetensors folder in F16, Q8_0 or the Q4_K_M mix gives the GGUF's logits within a
//! quantization tolerance, and the Q4_K_M mix picks llama.cpp's types; converted to F16, each
//! F16 fixture (Mistral, Qwen 3, Phi 3, Gemma 3) is the GGUF's very tensor bytes and settings,
//! and each fixture matches transformers' own outputs within the fixture's tolerance (every
//! case's first-step logits, the first case's greedy tokens); a Hub repository
//! (a stand-in on 127.0.0.1) converts to the very bytes its folder converts to, resuming its
//! downloads after an interrupted run.

#[path = "support/hf_folder.rs"]
mod hf_folder;
#[path = "support/hub_standin.rs"]
mod hub_standin;
mod support;

use std::path::{Path, PathBuf};

use doppler_engine::{
    gguf::{GgmlType, GgufFile},
    ChatMessage, Engine, LoadOptions, LoadedModel,
};
use doppler_store::convert::gguf_to_rdrr;
use hf_folder::write_hf_folder;
use support::{
    compare::{argmax, max_abs_diff},
    gpu::default_engine,
    models::{fixture, fixtures_dir, model_path, SMOLLM2},
    transformers::check_first_steps_against_transformers,
};

fn fixtures() -> Vec<PathBuf> {
    let dir = fixtures_dir();
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("model.gguf"))
        .filter(|path| path.is_file())
        .collect();
    found.sort();
    assert!(found.len() >= 6, "the architecture fixtures under {}", dir.display());
    found
}

fn load(engine: &Engine, path: &Path) -> std::sync::Arc<LoadedModel> {
    let options = LoadOptions { context_len: Some(64), max_batch: Some(16), ..Default::default() };
    engine.load_model(path, options, &mut |_| {}).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Converts `gguf` into `dir` and checks both give identical logits after `text`.
fn check_same_logits(engine: &Engine, gguf: &Path, dir: &Path, shard_limit: u64, text: &str) {
    let written = gguf_to_rdrr(gguf, dir, shard_limit, &mut |_| {}).unwrap();
    assert!(written.files.len() > 2, "{}: several shards, got {:?}", gguf.display(), written.files);
    let original = load(engine, gguf);
    let converted = load(engine, &written.manifest().path);
    assert_eq!(converted.info().architecture, original.info().architecture);
    assert_eq!(converted.info().quantization, original.info().quantization);
    assert_eq!(converted.info().weight_bytes, original.info().weight_bytes);
    let tokens = original.tokenizer().encode(text, original.tokenizer().add_bos()).unwrap();
    assert_eq!(converted.tokenizer().encode(text, converted.tokenizer().add_bos()).unwrap(), tokens);
    assert_eq!(converted.chat_template().origin(), original.chat_template().origin());
    let chat = [ChatMessage::user(text)];
    assert_eq!(
        converted.chat_template().render(&chat, true).ok(),
        original.chat_template().render(&chat, true).ok()
    );
    let expected = original.new_session().unwrap().logits_after(&tokens).unwrap();
    let actual = converted.new_session().unwrap().logits_after(&tokens).unwrap();
    let differing = expected.iter().zip(&actual).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    assert_eq!(differing, 0, "{}: {differing} of {} logits differ", gguf.display(), expected.len());
}

#[test]
fn an_rdrr_made_from_each_fixture_gives_its_logits_bit_for_bit() {
    let engine = default_engine();
    for gguf in fixtures() {
        let dir = tempfile::tempdir().unwrap();
        // Shards just large enough for the largest tensor: each fixture spans several.
        let largest = GgufFile::open(&gguf).unwrap().tensors().iter().map(|t| t.n_bytes).max().unwrap();
        check_same_logits(&engine, &gguf, dir.path(), largest + 256, "The quick brown fox jumps");
    }
}

#[test]
fn an_rdrr_made_from_smollm2_gives_its_logits_bit_for_bit() {
    let Some(gguf) = model_path(SMOLLM2) else { return };
    let engine = default_engine();
    let dir = tempfile::tempdir().unwrap();
    check_same_logits(&engine, &gguf, dir.path(), 32 << 20, "Why is the sky blue?");
}

/// Requantizing these fixtures' random weights into another type moves a logit by at most
/// this: 2% of their ±12 span (measured: 0.17 at most, Qwen 3's F16 to Q8_0).
const LOGIT_TOLERANCE: f32 = 0.25;
/// The Q4_K_M mix (4.5 bits a weight against Q8_0's 8.5) moves a logit by at most 1.0
/// (measured: the llama fixture's Q4_K weights requantized; 0.69 for Qwen 3, whose rows of 256
/// take Q4_K and the rest Q8_0), under 9% of the ±12 span; a tensor in a wrong layout or type
/// moves them by about the whole span.
const Q4_K_M_LOGIT_TOLERANCE: f32 = 1.25;

#[test]
fn a_safetensors_folder_converts_to_the_ggufs_logits() {
    use doppler_engine::rdrr::{open_rdrr, ShardCheck};
    use doppler_store::convert::{safetensors_to_rdrr, TargetQuant};
    let engine = default_engine();
    for architecture in ["llama3", "qwen2", "qwen3"] {
        let gguf = fixture(architecture);
        let folder = tempfile::tempdir().unwrap();
        write_hf_folder(&gguf, folder.path());
        let original = load(&engine, &gguf);
        let text = "The quick brown fox jumps";
        let tokens = original.tokenizer().encode(text, original.tokenizer().add_bos()).unwrap();
        let expected = original.new_session().unwrap().logits_after(&tokens).unwrap();
        // F16 holds F16 and F32 weights exactly; the llama fixture's head is Q6_K.
        let all_f16 = GgufFile::open(&gguf)
            .unwrap()
            .tensors()
            .iter()
            .all(|t| matches!(t.ggml_type, GgmlType::F16 | GgmlType::F32) || t.dims.len() == 1);
        let gguf_types = tensor_types(&GgufFile::open(&gguf).unwrap());
        for quant in [TargetQuant::F16, TargetQuant::Q8_0, TargetQuant::Q4_K_M] {
            let out = tempfile::tempdir().unwrap();
            let written =
                safetensors_to_rdrr(folder.path(), out.path(), quant, 4 << 20, &mut |_| {}).unwrap();
            let converted = load(&engine, &written.manifest().path);
            assert_eq!(converted.info().architecture, original.info().architecture);
            if quant == TargetQuant::Q4_K_M {
                assert_eq!(converted.info().quantization, "Q4_K_M");
                let rdrr = open_rdrr(&written.manifest().path, ShardCheck::Sha256).unwrap();
                if architecture == "llama3" {
                    // This fixture is llama.cpp's own Q4_K_M (rows of 256 and 512): the same
                    // types, the head and layer 1's attn_v and ffn_down in Q6_K.
                    let same: Vec<_> =
                        gguf_types.iter().filter(|(name, _)| name != "rope_freqs.weight").cloned().collect();
                    assert_eq!(tensor_types(&rdrr), same, "{architecture}");
                }
                // Rows that are not whole 256-element blocks (the others' 128 and 384) take Q8_0.
                for tensor in rdrr.tensors().iter().filter(|t| t.dims.len() == 2) {
                    let k_quant = matches!(tensor.ggml_type, GgmlType::Q4_K | GgmlType::Q6_K);
                    assert_eq!(
                        k_quant,
                        tensor.dims[0] % 256 == 0,
                        "{architecture} {}: {:?} rows of {}",
                        tensor.name,
                        tensor.ggml_type,
                        tensor.dims[0]
                    );
                    assert!(k_quant || tensor.ggml_type == GgmlType::Q8_0, "{architecture} {}", tensor.name);
                }
            }
            assert_eq!(
                converted.tokenizer().encode(text, converted.tokenizer().add_bos()).unwrap(),
                tokens,
                "{architecture}"
            );
            let chat = [ChatMessage::user(text)];
            assert_eq!(
                converted.chat_template().render(&chat, true).ok(),
                original.chat_template().render(&chat, true).ok(),
                "{architecture}"
            );
            let actual = converted.new_session().unwrap().logits_after(&tokens).unwrap();
            let (worst, same_argmax) =
                (max_abs_diff(&expected, &actual), argmax(&expected) == argmax(&actual));
            let span = expected.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            eprintln!("{architecture} {quant:?}: largest logit difference {worst} (logits within ±{span}), argmax agrees: {same_argmax}");
            match quant {
                TargetQuant::F16 if all_f16 => {
                    assert_eq!(worst, 0.0, "{architecture}: F16 round-trips exactly")
                }
                TargetQuant::Q4_K_M => assert!(
                    worst <= Q4_K_M_LOGIT_TOLERANCE && same_argmax,
                    "{architecture} {quant:?}: {worst}"
                ),
                _ => {
                    assert!(worst <= LOGIT_TOLERANCE && same_argmax, "{architecture} {quant:?}: {worst}")
                }
            }
        }
    }
}

#[test]
fn a_safetensors_conversion_of_each_fixture_matches_transformers() {
    use doppler_store::convert::{safetensors_to_rdrr, TargetQuant};
    for architecture in ["llama3", "qwen2", "qwen3", "mistral", "phi3", "gemma3"] {
        let folder = tempfile::tempdir().unwrap();
        write_hf_folder(&fixture(architecture), folder.path());
        let out = tempfile::tempdir().unwrap();
        let written = safetensors_to_rdrr(folder.path(), out.path(), TargetQuant::F16, 4 << 20, &mut |_| {})
            .unwrap_or_else(|e| panic!("{architecture}: {e}"));
        check_first_steps_against_transformers(architecture, &written.manifest().path);
    }
}

#[test]
fn a_safetensors_conversion_to_f16_holds_each_f16_fixtures_tensors_and_settings() {
    use doppler_engine::rdrr::{open_rdrr, ShardCheck};
    use doppler_store::convert::{safetensors_to_rdrr, TargetQuant};
    // The fixtures llama.cpp wrote in F16 (norms and Phi 3's rope factors in F32): converted to
    // F16 they must come out as the very same bytes, Gemma's norms with their +1, Llama's Q
    // and K permuted, Phi 3's fused matrices and LongRoPE factors as llama.cpp writes them.
    for architecture in ["mistral", "qwen3", "phi3", "gemma3"] {
        let gguf = GgufFile::open(&fixture(architecture)).unwrap();
        let folder = tempfile::tempdir().unwrap();
        write_hf_folder(&fixture(architecture), folder.path());
        let out = tempfile::tempdir().unwrap();
        let written =
            safetensors_to_rdrr(folder.path(), out.path(), TargetQuant::F16, 4 << 20, &mut |_| {}).unwrap();
        let rdrr = open_rdrr(&written.manifest().path, ShardCheck::Sha256).unwrap();
        assert_eq!(tensor_types(&rdrr), tensor_types(&gguf), "{architecture}");
        for info in gguf.tensors() {
            let ours = rdrr.tensor(&info.name).unwrap();
            assert_eq!(ours.dims, info.dims, "{architecture} {}", info.name);
            assert!(
                rdrr.tensor_data(ours) == gguf.tensor_data(info),
                "{architecture} {}: other bytes",
                info.name
            );
        }
        let arch = gguf.architecture().unwrap();
        // llama.cpp also writes Llama's vocabulary size and full-head rotary width, which the
        // engine takes from the vocabulary and the head width.
        let derived = ["llama.vocab_size", "llama.rope.dimension_count"];
        for (key, value) in gguf.metadata().iter().filter(|(key, _)| key.starts_with(&format!("{arch}."))) {
            if !derived.contains(&key) {
                assert_eq!(rdrr.metadata().get(key), Some(value), "{architecture}: {key}");
            }
        }
    }
}

/// Each tensor's name and type, sorted by name.
fn tensor_types(file: &GgufFile) -> Vec<(String, GgmlType)> {
    let mut types: Vec<_> = file.tensors().iter().map(|t| (t.name.clone(), t.ggml_type)).collect();
    types.sort_by(|a, b| a.0.cmp(&b.0));
    types
}

const SAFETENSORS_REPO: &str = "doppler-test/Qwen2-Tiny";

/// A safetensors repository's files as the Hub holds them: small JSON files in plain git,
/// the weights in LFS.
fn standin_repo(folder: &Path) -> Vec<hub_standin::StandinFile> {
    use hub_standin::StandinFile;
    let read = |name: &str| std::fs::read(folder.join(name)).unwrap();
    let mut files: Vec<StandinFile> = ["config.json", "tokenizer.json", "tokenizer_config.json"]
        .into_iter()
        .map(|name| StandinFile::plain(name, read(name)))
        .collect();
    files.push(StandinFile::new("model.safetensors", read("model.safetensors")));
    files
}

#[test]
fn a_hub_repo_converts_like_its_folder_and_an_interrupted_convert_resumes() {
    use doppler_engine::store::ModelStore;
    use doppler_store::{
        convert::{
            convert_into_store, convert_repo_into_store, ConvertError, ConvertEvent, ConvertRequest,
            HubSource, TargetQuant,
        },
        download::{CancelToken, DownloadError, RetryPolicy},
        hub::{HubClient, HubConfig},
        PullEvent,
    };
    use hub_standin::{Fault, HubStandin, StandinFile};

    let sources = tempfile::tempdir().unwrap();
    let folder = sources.path().join("Qwen2-Tiny");
    std::fs::create_dir(&folder).unwrap();
    write_hf_folder(&fixture("qwen2"), &folder);
    let hub = HubStandin::start();
    hub.add_repo(SAFETENSORS_REPO, standin_repo(&folder));
    hub.add_repo("doppler-test/Qwen2-Tiny-GGUF", vec![StandinFile::new("qwen2-tiny-Q8_0.gguf", vec![0; 64])]);
    let mut config = HubConfig::new(&hub.url);
    config.stall_timeout = std::time::Duration::from_secs(2);
    let client = HubClient::new(config).unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let source = HubSource::parse(SAFETENSORS_REPO).unwrap();
    let (cancel, quant) = (CancelToken::new(), Some(TargetQuant::Q4_K_M));

    let request = ConvertRequest { source: folder.clone(), quant, name: Some("from-folder".into()) };
    let from_folder = convert_into_store(&store, &request, &mut |_| {}).unwrap();

    // The three JSON files arrive; the weights' connection drops after 1 MB (of 4), and a policy
    // of one attempt gives up: nothing is installed, the partial weights stay.
    for fault in [Fault::Clean, Fault::Clean, Fault::Clean, Fault::DropAfter(1_000_000)] {
        hub.push_fault(fault);
    }
    let give_up = RetryPolicy { max_attempts: 1, ..RetryPolicy::default() };
    let error =
        convert_repo_into_store(&client, &store, &source, quant, None, &give_up, &cancel, &mut |_| {})
            .unwrap_err();
    assert!(matches!(error, ConvertError::Download(DownloadError::GaveUp { .. })), "{error}");
    assert!(store.get("qwen2-tiny-rdrr").unwrap().is_none());

    let mut events = Vec::new();
    let converted = convert_repo_into_store(
        &client,
        &store,
        &source,
        quant,
        None,
        &RetryPolicy::default(),
        &cancel,
        &mut |event| events.push(event),
    )
    .unwrap();
    assert_eq!(converted.name(), "qwen2-tiny-rdrr");
    let starts = hub.range_starts();
    assert_eq!(starts.len(), 5, "only the weights were asked for again: {starts:?}");
    assert!(
        starts[4].is_some_and(|start| start > 0 && start <= 1_000_000),
        "the weights resumed: {starts:?}"
    );
    assert!(events.iter().any(|event| matches!(event, ConvertEvent::Download(PullEvent::Resumed { .. }))));
    assert!(events.iter().any(|event| matches!(event, ConvertEvent::Convert(_))));
    // The same files, byte for byte, as the folder's conversion; its downloads are gone.
    let shas = |model: &doppler_engine::store::InstalledModel| {
        model.manifest.files().iter().map(|file| file.sha256.clone()).collect::<Vec<_>>()
    };
    assert_eq!(shas(&converted), shas(&from_folder));
    assert_eq!(converted.manifest.quantization.as_deref(), Some("Q4_K_M"));
    assert!(!store.downloads_dir().join("hub-sources").read_dir().unwrap().any(|_| true));

    let error = convert_repo_into_store(
        &client,
        &store,
        &HubSource::parse("doppler-test/Qwen2-Tiny-GGUF").unwrap(),
        quant,
        None,
        &give_up,
        &cancel,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(error.to_string().contains("doppler models pull"), "{error}");
}

#[test]
fn a_sharded_repo_fetches_only_the_weights_its_index_names() {
    use doppler_engine::store::ModelStore;
    use doppler_store::{
        convert::{convert_repo_into_store, HubSource},
        download::{CancelToken, RetryPolicy},
        hub::{HubClient, HubConfig},
    };
    use hub_standin::{HubStandin, StandinFile};

    let folder = tempfile::tempdir().unwrap();
    write_hf_folder(&fixture("qwen2"), folder.path());
    let mut files = standin_repo(folder.path());
    // The weights under a shard's name, named by the index; beside them the same model in a
    // layout the converter cannot read, which must not be fetched.
    let weights = files.pop().unwrap();
    let shard = "model-00001-of-00001.safetensors";
    files.push(StandinFile::new(shard, weights.bytes.to_vec()));
    let index = serde_json::json!({"metadata": {}, "weight_map": {"model.embed_tokens.weight": shard}});
    files.push(StandinFile::plain("model.safetensors.index.json", index.to_string().into_bytes()));
    files.push(StandinFile::new("consolidated.safetensors", b"not safetensors".to_vec()));
    let hub = HubStandin::start();
    hub.add_repo(SAFETENSORS_REPO, files);
    let client = HubClient::new(HubConfig::new(&hub.url)).unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let source = HubSource::parse(SAFETENSORS_REPO).unwrap();
    let installed = convert_repo_into_store(
        &client,
        &store,
        &source,
        None,
        Some("sharded".into()),
        &RetryPolicy::default(),
        &CancelToken::new(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(installed.manifest.quantization.as_deref(), Some("Q8_0"));
    // config, tokenizer, tokenizer_config, the index and its one shard.
    assert_eq!(hub.range_starts().len(), 5, "{:?}", hub.range_starts());
}
