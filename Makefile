# DOPPLER's two entry points: `make run` and `make test`.

SHELL := /bin/bash
.DEFAULT_GOAL := test

CARGO ?= cargo
DOPPLER := target/release/doppler
# The default models, linked from the model store under the file names the tests look for.
TEST_MODELS_DIR := $(CURDIR)/target/test-models
DEFAULT_MODELS := gemma-3-270m smollm2-135m-instruct
APP := target/release/doppler-app
SEED_TOOL := target/release/examples/seed_conversation
TAURI_DRIVER := $(CURDIR)/target/tools/bin/tauri-driver

.PHONY: test lint cross-check test-engine e2e run chat build models test-models check-system app app-deps ui test-ui tauri-driver test-openai-client

## Everything: style and lints, the other platforms type-checked, the engine and CLI (on
## lavapipe where there is no GPU), then the app.
test: test-engine test-ui e2e test-openai-client lint cross-check

## One style and no lint warnings, across every crate and every test.
lint: check-system app-deps
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --release -- -D warnings

## The design card promises Metal and DX12: the engine and CLI type-check for macOS on Apple
## silicon (Metal), the whole workspace for Windows (DX12; C parts through Debian's mingw-w64).
cross-check:
	rustup target add aarch64-apple-darwin x86_64-pc-windows-gnu
	$(CARGO) check --release --target aarch64-apple-darwin -p doppler-engine -p doppler-cli
	$(CARGO) check --release --target x86_64-pc-windows-gnu --workspace --all-targets

## Builds the desktop app and opens its window (it fetches the default model on first run).
run: app
	$(APP)

## `doppler serve` checked with the official `openai` Python client (pip, in a venv under target/).
OPENAI_VENV := target/openai-venv
test-openai-client: test-models
	test -x $(OPENAI_VENV)/bin/python || python3 -m venv $(OPENAI_VENV)
	$(OPENAI_VENV)/bin/pip install --quiet openai
	$(OPENAI_VENV)/bin/python tests/openai_client/check.py $(DOPPLER) tests/data/hf/llama3/model.gguf

## Builds the CLI and chats with Gemma 3 270M in the terminal.
chat: models
	$(DOPPLER) chat --model gemma-3-270m

## Workspace tests in release mode (GPU kernels on lavapipe are CPU-heavy); every test
## binary runs even after one fails, so one CI run shows every failure.
test-engine: check-system app-deps test-models
	DOPPLER_TEST_MODELS_DIR=$(TEST_MODELS_DIR) $(CARGO) test --workspace --release --no-fail-fast

## The desktop app's end-to-end tests: the real app under Xvfb, driven by tauri-driver and
## WebKitWebDriver, on the default model from the store `make test-models` filled (first: its
## workspace build leaves an app binary without the built-in UI, which `app` then replaces).
e2e: test-models app tauri-driver
	TAURI_DRIVER=$(TAURI_DRIVER) tests/e2e/run.sh $(APP) $(SEED_TOOL) $(DOPPLER)

build:
	$(CARGO) build --release -p doppler-cli

## Installs the default models into the model store (the first time only).
models: build
	$(DOPPLER) models fetch-defaults

## The CLI built with every workspace target, so the test build that follows reuses it (a
## build of the CLI alone unifies dependency features differently and rebuilds half of them).
test-models: check-system app-deps
	$(CARGO) build --release --workspace --all-targets
	$(DOPPLER) models fetch-defaults
	@mkdir -p $(TEST_MODELS_DIR)
	@for model in $(DEFAULT_MODELS); do \
		file=$$($(DOPPLER) models path $$model) && ln -sfn "$$file" $(TEST_MODELS_DIR)/ || exit 1; \
	done
	@echo "DOPPLER_TEST_MODELS_DIR=$(TEST_MODELS_DIR)"

## The desktop app (release, with the UI built into it) and the tool the e2e seeds data with.
app: app-deps ui
	$(CARGO) build --release -p doppler-app --features custom-protocol --bin doppler-app --example seed_conversation

## The app's system libraries (WebKitGTK) and Node, installed with apt where we are root.
app-deps:
	@src-tauri/install-deps.sh

ui: ui/node_modules/.package-lock.json
	npm --prefix ui run build

ui/node_modules/.package-lock.json: ui/package-lock.json
	npm --prefix ui ci --no-fund --no-audit

## The UI's type check and unit tests (Vitest).
test-ui: ui/node_modules/.package-lock.json
	npm --prefix ui run check
	npm --prefix ui test

tauri-driver:
	@[ -x $(TAURI_DRIVER) ] || $(CARGO) install tauri-driver --locked --root $(CURDIR)/target/tools

## Checks only; .ci/run installs what is missing (as root, on Debian).
check-system:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install a Rust toolchain (https://rustup.rs)"; exit 1; }
ifeq ($(shell uname -s),Linux)
	@{ /sbin/ldconfig -p 2>/dev/null || ldconfig -p; } | grep -q 'libvulkan\.so\.1' || { \
		echo "The Vulkan loader is missing. On Debian/Ubuntu: sudo apt-get install libvulkan1 mesa-vulkan-drivers (or run .ci/run as root)"; exit 1; }
	@compgen -G "/usr/share/vulkan/icd.d/*.json" >/dev/null || compgen -G "/etc/vulkan/icd.d/*.json" >/dev/null || [ -n "$${VK_DRIVER_FILES:-}$${VK_ICD_FILENAMES:-}" ] || { \
		echo "No Vulkan driver is installed. Without a GPU, install lavapipe (Mesa's CPU Vulkan driver): sudo apt-get install mesa-vulkan-drivers"; exit 1; }
endif
