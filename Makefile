# DOPPLER's two entry points: `make run` and `make test`.

SHELL := /bin/bash
.DEFAULT_GOAL := test

CARGO ?= cargo
DOPPLER := target/release/doppler
# The default models, linked from the model store under the file names the tests look for.
TEST_MODELS_DIR := $(CURDIR)/target/test-models
DEFAULT_MODELS := gemma-3-270m smollm2-135m-instruct

.PHONY: test test-engine e2e run build models test-models check-system

## Everything: the engine and CLI (on lavapipe where there is no GPU), then the app.
test: test-engine e2e

## Builds the CLI and chats with Gemma 3 270M in the terminal.
run: models
	$(DOPPLER) chat --model gemma-3-270m

## Workspace tests in release mode: GPU kernels on lavapipe are CPU-heavy.
test-engine: check-system test-models
	DOPPLER_TEST_MODELS_DIR=$(TEST_MODELS_DIR) $(CARGO) test --workspace --release

## The desktop app's end-to-end tests.
e2e:
	@echo "e2e: the desktop app does not exist yet; nothing to test"

build:
	$(CARGO) build --release -p doppler-cli

## Installs the default models into the model store (the first time only).
models: build
	$(DOPPLER) models fetch-defaults

test-models: models
	@mkdir -p $(TEST_MODELS_DIR)
	@for model in $(DEFAULT_MODELS); do \
		file=$$($(DOPPLER) models path $$model) && ln -sfn "$$file" $(TEST_MODELS_DIR)/ || exit 1; \
	done
	@echo "DOPPLER_TEST_MODELS_DIR=$(TEST_MODELS_DIR)"

## Checks only; .ci/run installs what is missing (as root, on Debian).
check-system:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install a Rust toolchain (https://rustup.rs)"; exit 1; }
ifeq ($(shell uname -s),Linux)
	@{ /sbin/ldconfig -p 2>/dev/null || ldconfig -p; } | grep -q 'libvulkan\.so\.1' || { \
		echo "The Vulkan loader is missing. On Debian/Ubuntu: sudo apt-get install libvulkan1 mesa-vulkan-drivers (or run .ci/run as root)"; exit 1; }
	@compgen -G "/usr/share/vulkan/icd.d/*.json" >/dev/null || compgen -G "/etc/vulkan/icd.d/*.json" >/dev/null || [ -n "$${VK_DRIVER_FILES:-}$${VK_ICD_FILENAMES:-}" ] || { \
		echo "No Vulkan driver is installed. Without a GPU, install lavapipe (Mesa's CPU Vulkan driver): sudo apt-get install mesa-vulkan-drivers"; exit 1; }
endif
