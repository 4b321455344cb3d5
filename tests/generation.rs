//! Generation behaviour on a real model (SmolLM2 135M, the smallest default): stop conditions,
//! cancellation, context limits, KV-cache reuse across turns, multi-step GPU-resident decode
//! and seeded sampling. Runs on lavapipe in CI; models come from `DOPPLER_TEST_MODELS_DIR`.

mod support;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use doppler_engine::{
    gpu::WeightTraffic, CancelToken, ChatMessage, GenerateError, GenerateOptions, LoadOptions, LoadedModel,
    ProfileCadence, Role, SamplingParams, StepPhase, StopReason,
};
use support::{
    gpu::default_engine,
    models::{model_path, SMOLLM2},
};

fn model() -> Option<Arc<LoadedModel>> {
    let path = model_path(SMOLLM2)?;
    let options = LoadOptions { context_len: Some(96), max_batch: Some(16), ..Default::default() };
    Some(default_engine().load_model(&path, options, &mut |_| {}).unwrap())
}

fn greedy(max_tokens: u32) -> GenerateOptions {
    GenerateOptions { sampling: SamplingParams::greedy(), max_tokens, stop: Vec::new(), ignore_eos: false }
}

fn prompt(model: &LoadedModel, text: &str) -> Vec<u32> {
    let tokenizer = model.tokenizer();
    tokenizer.encode(text, tokenizer.add_bos()).unwrap()
}

#[test]
fn generation_behaviour() {
    let Some(model) = model() else { return };
    let mut session = model.new_session().unwrap();
    let capital = prompt(&model, "The capital of France is");

    // Max tokens, and streamed text equal to the summary's text.
    let mut streamed = String::new();
    let summary = session
        .generate(&capital, &greedy(6), &CancelToken::new(), &mut |event| streamed.push_str(&event.text))
        .unwrap();
    assert_eq!(summary.stop_reason, StopReason::MaxTokens);
    assert_eq!(summary.tokens.len(), 6);
    assert_eq!(streamed, summary.text);
    assert!(summary.text.starts_with(" Paris."), "{:?}", summary.text);
    let reference_tokens = summary.tokens.clone();

    // A stop string ends generation and is not part of the text.
    session.reset();
    let options = GenerateOptions { stop: vec![".".into()], ..greedy(20) };
    let summary = session.generate(&capital, &options, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(summary.stop_reason, StopReason::StopString);
    assert_eq!(summary.text, " Paris");

    // Cancellation from another handle stops after the current step.
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    let mut seen = 0;
    let summary = session
        .generate(&capital, &greedy(20), &cancel, &mut |_| {
            seen += 1;
            if seen == 2 {
                canceller.cancel();
            }
        })
        .unwrap();
    assert_eq!(summary.stop_reason, StopReason::Cancelled);
    assert_eq!(summary.tokens.len(), 2);

    // Several decode steps per submit, with a second batch queued behind the one being read,
    // give exactly the tokens of one step per submit, and tokens decoded past the stop (in
    // the batch read or the one still queued) are not kept in the cache.
    session.reset();
    session.set_steps_per_submit(4);
    let summary = session.generate(&capital, &greedy(6), &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(summary.tokens, reference_tokens);
    assert_eq!(session.cached_tokens().len(), capital.len() + 5);
    session.reset();
    let summary = session
        .generate(
            &capital,
            &GenerateOptions { stop: vec![".".into()], ..greedy(20) },
            &CancelToken::new(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(summary.text, " Paris");
    assert_eq!(session.cached_tokens().len(), capital.len() + summary.tokens.len() - 1);

    // A continued conversation reuses the cache and decodes what a fresh session decodes,
    // after multi-step decoding ran ahead of the end of the previous reply.
    let mut follow_up = capital.clone();
    follow_up.extend_from_slice(&reference_tokens);
    follow_up.extend(prompt(&model, " What about Spain?"));
    let reused = session.generate(&follow_up, &greedy(5), &CancelToken::new(), &mut |_| {}).unwrap();
    assert!(reused.prefilled_tokens < follow_up.len(), "the cached prefix was run again");
    let mut fresh_session = model.new_session().unwrap();
    let fresh = fresh_session.generate(&follow_up, &greedy(5), &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(reused.tokens, fresh.tokens);

    // The context fills up: generation ends with ContextFull, a longer prompt is refused.
    session.reset();
    let summary = session
        .generate(
            &capital,
            &GenerateOptions { ignore_eos: true, ..greedy(500) },
            &CancelToken::new(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(summary.stop_reason, StopReason::ContextFull);
    assert!(summary.tokens.len() + capital.len() <= 96);
    let too_long = vec![capital[0]; 200];
    assert!(matches!(
        session.generate(&too_long, &greedy(1), &CancelToken::new(), &mut |_| {}),
        Err(GenerateError::PromptTooLong { .. })
    ));

    session.set_steps_per_submit(1);

    // A prefill on top of cached tokens (benchmarks at depth) samples what one prefill of
    // both parts does.
    let question = prompt(&model, " What about Spain?");
    let mut whole = capital.clone();
    whole.extend_from_slice(&question);
    let greedy_sampling = SamplingParams::greedy();
    let at_once = session.prefill_from_empty(&whole, &greedy_sampling).unwrap();
    session.prefill_from_empty(&capital, &greedy_sampling).unwrap();
    let on_top = session.prefill_after_cached(&question, &greedy_sampling).unwrap();
    assert_eq!(on_top, at_once);
    assert_eq!(session.cached_tokens(), &whole[..]);
    assert!(matches!(
        session.prefill_after_cached(&vec![capital[0]; 96], &greedy_sampling),
        Err(GenerateError::PromptTooLong { .. })
    ));

    // Seeded sampling reproduces itself; chat templates drive generation too.
    let sampled = GenerateOptions {
        sampling: SamplingParams {
            temperature: 0.9,
            top_k: 40,
            top_p: 0.95,
            seed: 7,
            ..SamplingParams::greedy()
        },
        ..greedy(8)
    };
    let messages = [ChatMessage { role: Role::User, content: "Name a fruit.".into() }];
    session.reset();
    let first = session.generate_chat(&messages, &sampled, &CancelToken::new(), &mut |_| {}).unwrap();
    session.reset();
    let second = session.generate_chat(&messages, &sampled, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(first.tokens, second.tokens);
    assert!(!first.tokens.is_empty());

    // Live profiles: every prefill step and one decode step in 4 are timed and handed on, and
    // the tokens are those of an untimed run.
    let profiles = Arc::new(Mutex::new(Vec::new()));
    let sink = profiles.clone();
    assert!(session.sample_profiles(
        ProfileCadence { every: 4, min_interval: Duration::ZERO },
        Box::new(move |step| sink.lock().unwrap().push(step))
    ));
    session.reset();
    let summary = session.generate(&capital, &greedy(6), &CancelToken::new(), &mut |_| {}).unwrap();
    session.stop_sampling_profiles();
    assert_eq!(summary.tokens, reference_tokens);
    let profiles = profiles.lock().unwrap();
    let phases: Vec<(StepPhase, u32, u32)> =
        profiles.iter().map(|p| (p.phase, p.position, p.tokens)).collect();
    let prompt_len = capital.len() as u32;
    assert_eq!(phases[0], (StepPhase::Prefill, 0, prompt_len), "{phases:?}");
    let decode: Vec<u32> = phases
        .iter()
        .filter(|(phase, ..)| *phase == StepPhase::Decode)
        .map(|(_, position, _)| *position)
        .collect();
    // Five decode steps feed the six tokens, from position prompt_len on; the first four go
    // out as single steps before any is read back, and the fourth is the one timed.
    assert_eq!(decode, [prompt_len + 3], "{phases:?}");
    for profile in profiles.iter() {
        assert!(profile.kernels.iter().any(|k| k.label.contains("attention")), "{:?}", profile.kernels);
        assert!(profile.kernels.iter().all(|k| k.nanoseconds.is_finite()));
        // Weight matrix products and the embedding carry the bytes they read; attention none.
        for kernel in &profile.kernels {
            let reads_weights = !kernel.label.ends_with("(K splits)")
                && (kernel.label.contains("attn_q")
                    || kernel.label.contains("ffn_down")
                    || kernel.label.starts_with("lm head")
                    || kernel.label.starts_with("embedding"));
            if reads_weights {
                assert!(kernel.weight_bytes.is_some_and(|bytes| bytes > 0), "{kernel:?}");
            } else if kernel.op() == "attention" {
                assert_eq!(kernel.weight_bytes, None, "{kernel:?}");
            }
        }
        let bandwidth = WeightTraffic::of(&profile.kernels).gigabytes_per_second().unwrap();
        assert!(bandwidth.is_finite() && bandwidth > 0.0, "{bandwidth} GB/s");
    }
    drop(profiles);

    // The minimum interval holds back every step after the first timed one, the prompt's.
    let profiles = Arc::new(Mutex::new(Vec::new()));
    let sink = profiles.clone();
    let hourly = ProfileCadence { every: 1, min_interval: Duration::from_secs(3600) };
    assert!(session.sample_profiles(hourly, Box::new(move |step| sink.lock().unwrap().push(step))));
    session.reset();
    session.generate(&capital, &greedy(6), &CancelToken::new(), &mut |_| {}).unwrap();
    session.stop_sampling_profiles();
    let phases: Vec<StepPhase> = profiles.lock().unwrap().iter().map(|p| p.phase).collect();
    assert_eq!(phases, [StepPhase::Prefill]);
}
