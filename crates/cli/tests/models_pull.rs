//! `doppler models search | files | pull` against a stand-in Hub on 127.0.0.1: a pulled
//! model shows in `doppler models list --json`, and a pull killed mid-download resumes
//! with a Range request on the next run.

#[path = "../../../tests/support/hub_standin.rs"]
mod hub_standin;

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use hub_standin::{llama_gguf, sha256_hex, HubStandin, StandinFile, Trickle};

const REPO: &str = "doppler-test/Llama-Tiny-GGUF";

fn doppler(hub: &HubStandin, home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_doppler"));
    command.env("DOPPLER_HOME", home).env("HF_ENDPOINT", &hub.url).env_remove("HF_TOKEN");
    command
}

fn run(command: &mut Command) -> Output {
    let output = command.output().expect("the doppler binary runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

fn standin() -> HubStandin {
    let hub = HubStandin::start();
    hub.add_repo(REPO, vec![StandinFile::new("llama-tiny-Q8_0.gguf", llama_gguf())]);
    hub
}

fn listed_models(hub: &HubStandin, home: &Path) -> Vec<serde_json::Value> {
    let output = run(doppler(hub, home).args(["models", "list", "--json"]));
    serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap().as_array().unwrap().clone()
}

#[test]
fn search_files_and_pull_install_a_listed_model() {
    let hub = standin();
    let home = tempfile::tempdir().unwrap();
    let output = run(doppler(&hub, home.path()).args(["models", "search", "llama-tiny", "--json"]));
    let found: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(found[0]["id"], REPO, "{found}");
    assert_eq!(found[0]["formats"], serde_json::json!(["gguf"]), "{found}");

    let output = run(doppler(&hub, home.path()).args(["models", "files", REPO, "--json", "--budget", "1GB"]));
    let choices: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(choices[0]["quantization"], "Q8_0", "{choices}");
    assert_eq!(choices[0]["fit"], "fits", "{choices}");
    assert_eq!(choices[0]["recommended"], true, "{choices}");

    let output = run(doppler(&hub, home.path()).args(["models", "pull", REPO, "--name", "tiny"]));
    assert!(String::from_utf8_lossy(&output.stdout).contains("installed tiny"));
    let models = listed_models(&hub, home.path());
    assert_eq!(models.len(), 1);
    assert_eq!(models[0]["name"], "tiny");
    assert_eq!(models[0]["sha256"], sha256_hex(&llama_gguf()));
    assert_eq!(models[0]["architecture"], "llama");
}

/// The bytes of the download in progress under `home`.
fn part_bytes(home: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(home.join("downloads")) else { return 0 };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".part"))
        .map(|entry| entry.metadata().map_or(0, |metadata| metadata.len()))
        .sum()
}

#[test]
fn a_killed_pull_resumes_on_the_next_run() {
    let hub = standin();
    hub.set_trickle(Some(Trickle {
        fast_bytes: 256 * 1024,
        chunk: 8 * 1024,
        interval: Duration::from_millis(20),
    }));
    let home = tempfile::tempdir().unwrap();
    let mut child = doppler(&hub, home.path())
        .args(["models", "pull", REPO, "--quant", "q8_0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while part_bytes(home.path()) < 300_000 {
        assert!(Instant::now() < deadline, "the pull wrote no bytes");
        assert!(child.try_wait().unwrap().is_none(), "the pull ended before it was killed");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = part_bytes(home.path());
    assert!(kept >= 300_000 && kept < llama_gguf().len() as u64, "{kept}");

    hub.set_trickle(None);
    let output = run(doppler(&hub, home.path()).args(["models", "pull", REPO, "--quant", "Q8_0"]));
    assert!(String::from_utf8_lossy(&output.stdout).contains("installed llama-tiny-q8_0"));
    let starts = hub.range_starts();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_eq!(starts[0], None);
    assert!(starts[1].is_some_and(|start| start >= 300_000), "the second pull resumed: {starts:?}");
    let models = listed_models(&hub, home.path());
    assert_eq!(models[0]["sha256"], sha256_hex(&llama_gguf()));
}
