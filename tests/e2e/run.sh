#!/usr/bin/env bash
# Runs the end-to-end tests against a built app: a fresh user's data directory, the model
# store shared with `make test` (no second download), Xvfb for a display.
#   tests/e2e/run.sh PATH_TO_APP PATH_TO_SEED_TOOL PATH_TO_DOPPLER_CLI
set -euo pipefail

app=$(realpath "$1")
seed=$(realpath "$2")
# The remote-backend test serves the default model with `doppler serve`.
cli=$(realpath "$3")
cd "$(dirname "$0")"

# The store `make models` filled, found before XDG_DATA_HOME moves for the test. (A spec that
# needs a store or a Hub of its own, like model-manager.test.mjs, sets DOPPLER_HOME and
# HF_ENDPOINT before it starts tauri-driver, whose app inherits them.)
export DOPPLER_HOME="${DOPPLER_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/doppler}"
if [[ ! -f "$DOPPLER_HOME/models/smollm2-135m-instruct/model.json" ]]; then
  echo "e2e: the default model is not installed in $DOPPLER_HOME; run \`make models\` first" >&2
  exit 1
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config" XDG_CACHE_HOME="$scratch/cache" XDG_RUNTIME_DIR="$scratch/runtime"
mkdir -m 700 "$XDG_RUNTIME_DIR"
export DOPPLER_E2E_APP="$app" DOPPLER_E2E_CLI="$cli"
export DOPPLER_E2E_ARTIFACTS="${DOPPLER_E2E_ARTIFACTS:-$PWD/artifacts}"
# WebKitGTK under Xvfb: no GPU, so no DMA-BUF renderer or compositing.
export WEBKIT_DISABLE_DMABUF_RENDERER=1 WEBKIT_DISABLE_COMPOSITING_MODE=1 NO_AT_BRIDGE=1

rm -rf "$DOPPLER_E2E_ARTIFACTS"
# A reply the model would never write: raw HTML, a script and a javascript: link.
"$seed" "Injected markup" "Show me some HTML" \
  $'Here you go: <img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script>.\n\n[click me](javascript:window.__pwned=3) or read [the docs](https://example.com/docs).\n\n<iframe src="javascript:window.__pwned=4"></iframe>'

[[ -d node_modules ]] || npm ci --no-fund --no-audit
# Test files after the three paths run alone (e.g. remote-backend.test.mjs); else all of them.
if (($# > 3)); then
  xvfb-run --auto-servernum --server-args="-screen 0 1280x860x24" node --test --test-concurrency=1 --test-reporter=spec "${@:4}"
else
  xvfb-run --auto-servernum --server-args="-screen 0 1280x860x24" npm test
fi
echo "e2e: screenshots in $DOPPLER_E2E_ARTIFACTS"
