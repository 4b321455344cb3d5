//! `doppler models convert`: a GGUF converted into the store as RDRR prints its installed
//! name, shows in `doppler models list --json` and runs, giving the GGUF's greedy tokens; a
//! Hub repository (a stand-in on 127.0.0.1) of safetensors converts the same way, one of
//! GGUFs is sent to `models pull`.

#[path = "../../../tests/support/hf_folder.rs"]
mod hf_folder;
#[path = "../../../tests/support/hub_standin.rs"]
mod hub_standin;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

fn fixture(architecture: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/data/hf/{architecture}/model.gguf"))
}

fn doppler(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_doppler"));
    command.env("DOPPLER_HOME", home);
    command
}

fn run(command: &mut Command) -> Output {
    let output = command.output().expect("the doppler binary runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

fn greedy_tokens(home: &Path, model: &str) -> serde_json::Value {
    let output = run(doppler(home).args([
        "run",
        "--model",
        model,
        "--prompt",
        "The quick brown fox",
        "--raw",
        "--json",
        "--max-tokens",
        "8",
        "--ctx",
        "64",
    ]));
    serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()["tokens"].clone()
}

#[test]
fn a_converted_gguf_is_listed_and_runs_like_the_gguf() {
    let home = tempfile::tempdir().unwrap();
    let gguf = fixture("qwen2");
    let output =
        run(doppler(home.path()).args(["models", "convert"]).arg(&gguf).args(["--name", "qwen2-tiny"]));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("converted qwen2-tiny "), "{stdout}");

    let output = run(doppler(home.path()).args(["models", "list", "--json"]));
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let model = &listed[0];
    assert_eq!(model["name"], "qwen2-tiny", "{listed}");
    assert_eq!(model["file_name"], "rdrr.json", "{listed}");
    assert_eq!(model["architecture"], "qwen2", "{listed}");
    assert_eq!(model["sha256"].as_str().map(str::len), Some(64), "{listed}");
    assert!(!model["split_parts"].as_array().unwrap().is_empty(), "the shards: {listed}");

    let from_gguf = greedy_tokens(home.path(), gguf.to_str().unwrap());
    assert_eq!(greedy_tokens(home.path(), "qwen2-tiny"), from_gguf);

    // The default name comes from the file name; a name taken is refused before converting.
    let output = run(doppler(home.path()).args(["models", "convert"]).arg(&gguf));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("converted model-rdrr "));
    let output = doppler(home.path()).args(["models", "convert"]).arg(&gguf).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("already installed"), "{output:?}");
}

#[test]
fn convert_refuses_a_quantization_for_a_gguf_and_a_missing_source() {
    let home = tempfile::tempdir().unwrap();
    let output = doppler(home.path())
        .args(["models", "convert"])
        .arg(fixture("llama3"))
        .args(["--quant", "F16"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--quant"), "{output:?}");
    let output =
        doppler(home.path()).args(["models", "convert", "/nonexistent/model.gguf"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/model.gguf"), "{output:?}");
}

#[test]
fn a_hub_repo_of_safetensors_converts_and_one_of_ggufs_is_sent_to_pull() {
    use hub_standin::{HubStandin, StandinFile};
    let folder = tempfile::tempdir().unwrap();
    hf_folder::write_hf_folder(&fixture("qwen2"), folder.path());
    let read = |name: &str| std::fs::read(folder.path().join(name)).unwrap();
    let hub = HubStandin::start();
    let mut files: Vec<StandinFile> = ["config.json", "tokenizer.json", "tokenizer_config.json"]
        .into_iter()
        .map(|name| StandinFile::plain(name, read(name)))
        .collect();
    files.push(StandinFile::new("model.safetensors", read("model.safetensors")));
    hub.add_repo("doppler-test/Qwen2-Tiny", files);
    hub.add_repo(
        "doppler-test/Qwen2-Tiny-GGUF",
        vec![StandinFile::new("qwen2-tiny-Q8_0.gguf", read("config.json"))],
    );
    let home = tempfile::tempdir().unwrap();
    let convert = |source: &str| {
        let mut command = doppler(home.path());
        command.env("HF_ENDPOINT", &hub.url).env_remove("HF_TOKEN");
        command.args(["models", "convert", source, "--quant", "Q4_K_M"]);
        command
    };

    let output = run(&mut convert("doppler-test/Qwen2-Tiny@main"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("converted qwen2-tiny-rdrr "), "{stdout}");
    let output = run(doppler(home.path()).args(["models", "list", "--json"]));
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed[0]["name"], "qwen2-tiny-rdrr", "{listed}");
    assert_eq!(listed[0]["quantization"], "Q4_K_M", "{listed}");
    assert_eq!(listed[0]["architecture"], "qwen2", "{listed}");

    let output = convert("doppler-test/Qwen2-Tiny-GGUF").output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("doppler models pull"), "{output:?}");
    // A path that is not here reads as a repository id; the error says both.
    let output = convert("no-such/folder").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("no-such/folder is no file or folder here") && stderr.contains("needs access"),
        "{stderr}"
    );
}
