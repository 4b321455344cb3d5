//! `doppler devices --json` reports each adapter's memory tier and budget, and `doppler run`
//! refuses a model over the budget before loading it, with the numbers in the message.

use std::process::Command;

fn doppler(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_doppler")).args(args).output().expect("the doppler binary runs")
}

#[test]
fn devices_report_a_memory_tier_and_budget() {
    let output = doppler(&["devices", "--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let adapters: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let adapters = adapters.as_array().unwrap();
    assert!(!adapters.is_empty(), "no adapter (lavapipe is installed in CI)");
    for adapter in adapters {
        let memory = &adapter["memory"];
        let tier = memory["tier"].as_str().unwrap();
        assert!(["dedicated-large", "dedicated-small", "unified", "cpu"].contains(&tier), "{memory}");
        assert!(memory["host_total"].as_u64().unwrap() > 0, "{memory}");
        if adapter["device_type"] == "Cpu" {
            assert_eq!(tier, "cpu");
            let budget = memory["budget"].as_u64().expect("a CPU adapter's budget comes from host RAM");
            assert!(budget <= memory["host_available"].as_u64().unwrap(), "{memory}");
        }
    }
}

#[test]
fn a_model_over_the_gpu_memory_limit_is_refused_with_the_numbers() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/hf/qwen2/model.gguf");
    let output =
        doppler(&["run", "--model", model, "--gpu-memory", "1MiB", "--ctx", "2048", "--prompt", "hi"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("needs") && stderr.contains("budget") && stderr.contains("1.0 MB"), "{stderr}");
    assert!(stderr.contains("KV cache for 2048 tokens"), "{stderr}");
}
