// The model manager in the real app against a stand-in Hugging Face Hub on 127.0.0.1 (a node
// http server speaking search, tree, and `resolve` with a 302 carrying X-Linked-Etag and
// X-Linked-Size, with Range on the "CDN"): search → repository view with a fit badge → pull
// with progress, paused and resumed (a Range request) → load → a streamed reply; a repository
// of safetensors found by the search (marked Convert) → Convert to Q4_K_M with progress → the
// model installed.
// The app runs on a model store of its own (HF_ENDPOINT and DOPPLER_HOME reach it through
// tauri-driver's environment), holding the default model so that startup is as usual.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { By, Key } from 'selenium-webdriver';

import { byTestId, click, find, launchApp, quitApp, screenshot, textOf, useDriver, waitForText } from './app.mjs';

const REPO = 'doppler-e2e/SmolLM2-135M-Instruct-GGUF';
const FILE = 'SmolLM2-135M-Instruct-Q8_0.gguf';
// What the store names a model pulled from FILE.
const PULLED = 'smollm2-135m-instruct-q8_0';
const DEFAULT_MODEL = 'smollm2-135m-instruct';
// The first request trickles over about TRICKLE_CHUNKS × TRICKLE_INTERVAL_MS whatever the
// file's size (so there is progress to see and time to pause); the resumed one, asked with a
// Range, runs at full speed.
const TRICKLE_CHUNKS = 500;
const TRICKLE_INTERVAL_MS = 20;
const MODEL_READY_MS = 240_000;
const DOWNLOAD_MS = 180_000;
const TOKENS_MS = 180_000;
const PENDING = By.css('[data-testid="message"][data-pending="true"] [data-testid="message-content"]');

// A safetensors repository the stand-in Hub makes up (tinySafetensorsRepo), and what the store
// names the model converted from it.
const ST_REPO = 'doppler-e2e/Tiny-Llama';
const CONVERTED = 'tiny-llama-rdrr';
const CONVERT_MS = 120_000;

const sharedStore = process.env.DOPPLER_HOME;
let hub;
let home;
const rangeStarts = [];

/** The default model's file in the shared store, served as the Hub's FILE. */
function defaultModelFile() {
  const dir = join(sharedStore, 'models', DEFAULT_MODEL);
  const manifest = JSON.parse(readFileSync(join(dir, 'model.json'), 'utf8'));
  return { dir, path: join(dir, manifest.file_name) };
}

async function sha256Of(path) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

function json(res, body) {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** GPT-2's byte → printable character table, as byte-level BPE vocabularies spell bytes. */
function byteLevelChars() {
  const printable = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const chars = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) chars[b] = String.fromCodePoint(printable.includes(b) ? b : 256 + extra++);
  return chars;
}

/** A safetensors file of F32 tensors (`[name, shape]`) with small deterministic values. */
function safetensors(tensors) {
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.2;
  const header = {};
  const blobs = [];
  let offset = 0;
  for (const [name, shape] of tensors) {
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1)).map(() => (shape.length === 1 ? 1 : random()));
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + values.byteLength] };
    offset += values.byteLength;
    blobs.push(Buffer.from(values.buffer));
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, Buffer.from(json), ...blobs]);
}

/** A one-layer Llama of random weights with a byte-level tokenizer, as a Hub repository holds
 * it: the JSON files in plain git, the weights in LFS (with a sha256 in the tree). */
function tinySafetensorsRepo() {
  const [hidden, ffn, vocab] = [256, 512, 257];
  const config = {
    model_type: 'llama', hidden_size: hidden, intermediate_size: ffn, num_hidden_layers: 1,
    num_attention_heads: 4, num_key_value_heads: 4, max_position_embeddings: 256,
    rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true,
  };
  const tokenizer = {
    version: '1.0',
    added_tokens: [{ id: 256, content: '<|end|>', special: true }],
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    decoder: { type: 'ByteLevel' },
    model: { type: 'BPE', vocab: Object.fromEntries(byteLevelChars().map((char, id) => [char, id])), merges: [] },
  };
  const tokenizerConfig = { eos_token: '<|end|>', chat_template: '{% for m in messages %}{{ m.content }}{% endfor %}' };
  const layer = (name) => `model.layers.0.${name}.weight`;
  const weights = safetensors([
    ['model.embed_tokens.weight', [vocab, hidden]],
    ['model.norm.weight', [hidden]],
    [layer('input_layernorm'), [hidden]],
    [layer('post_attention_layernorm'), [hidden]],
    ...['q_proj', 'k_proj', 'v_proj', 'o_proj'].map((name) => [layer(`self_attn.${name}`), [hidden, hidden]]),
    [layer('mlp.gate_proj'), [ffn, hidden]],
    [layer('mlp.up_proj'), [ffn, hidden]],
    [layer('mlp.down_proj'), [hidden, ffn]],
  ]);
  const text = (path, value) => ({ path, bytes: Buffer.from(JSON.stringify(value)), lfs: false });
  return [
    text('config.json', config),
    text('tokenizer.json', tokenizer),
    text('tokenizer_config.json', tokenizerConfig),
    { path: 'model.safetensors', bytes: weights, lfs: true },
  ].map((file) => ({ ...file, sha256: createHash('sha256').update(file.bytes).digest('hex') }));
}

/** Answers the tree, `resolve` and CDN requests for `files` of `repo`; false for other paths. */
function serveRepo(repo, files, path, req, res) {
  if (path === `/api/models/${repo}/tree/main`) {
    json(res, files.map((file) => ({
      type: 'file', path: file.path, size: file.bytes.length, oid: '2'.repeat(40),
      ...(file.lfs ? { lfs: { oid: file.sha256, size: file.bytes.length, pointerSize: 134 } } : {}),
    })));
    return true;
  }
  const resolved = files.find((file) => path === `/${repo}/resolve/main/${file.path}`);
  if (resolved) {
    res.writeHead(302, { location: `/cdn/${repo}/${resolved.path}`, 'x-linked-size': String(resolved.bytes.length) });
    res.end();
    return true;
  }
  const served = files.find((file) => path === `/cdn/${repo}/${file.path}`);
  if (served) {
    const start = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
    const headers = { 'content-length': String(served.bytes.length - start) };
    if (start > 0) headers['content-range'] = `bytes ${start}-${served.bytes.length - 1}/${served.bytes.length}`;
    res.writeHead(start > 0 ? 206 : 200, headers);
    res.end(served.bytes.subarray(start));
    return true;
  }
  return false;
}

async function startHub(modelPath) {
  const size = statSync(modelPath).size;
  const sha256 = await sha256Of(modelPath);
  const [owner, name] = REPO.split('/');
  const stFiles = tinySafetensorsRepo();
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const path = decodeURIComponent(url.pathname);
    if (serveRepo(ST_REPO, stFiles, path, req, res)) return;
    if (path === '/api/models') {
      // The Hub's search by format tag: the app asks for GGUF and for safetensors repositories.
      const query = (url.searchParams.get('search') ?? '').toLowerCase();
      const tagged = { gguf: REPO, safetensors: ST_REPO }[url.searchParams.get('filter')];
      const found = tagged?.toLowerCase().includes(query) ? [{ id: tagged, downloads: 1234, likes: 5 }] : [];
      return json(res, found);
    }
    if (path === `/api/models/${REPO}/tree/main`) {
      return json(res, [
        { type: 'file', path: 'README.md', size: 12, oid: '0'.repeat(40) },
        { type: 'file', path: FILE, size, oid: '1'.repeat(40), lfs: { oid: sha256, size, pointerSize: 134 } },
      ]);
    }
    if (path === `/${REPO}/resolve/main/${FILE}`) {
      res.writeHead(302, { location: `/cdn/${owner}/${name}/${FILE}`, 'x-linked-etag': `"${sha256}"`, 'x-linked-size': String(size) });
      return res.end();
    }
    if (path === `/cdn/${owner}/${name}/${FILE}`) {
      const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      const start = range ? Number(range[1]) : 0;
      rangeStarts.push(range ? start : null);
      if (start >= size) {
        res.writeHead(416, { 'content-range': `bytes */${size}` });
        return res.end();
      }
      const headers = { 'content-length': String(size - start), 'accept-ranges': 'bytes' };
      if (range) headers['content-range'] = `bytes ${start}-${size - 1}/${size}`;
      res.writeHead(range ? 206 : 200, headers);
      const chunk = range ? 1 << 20 : Math.max(1024, Math.ceil(size / TRICKLE_CHUNKS));
      const body = createReadStream(modelPath, { start, highWaterMark: chunk });
      res.on('close', () => body.destroy());
      try {
        for await (const chunk of body) {
          if (res.destroyed) return;
          if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
          if (!range) await sleep(TRICKLE_INTERVAL_MS);
        }
      } catch (error) {
        // A paused download hangs up mid-body; anything else is the stand-in's own failure.
        if (!res.destroyed) throw error;
        return;
      }
      return res.end();
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'Repository not found' }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

useDriver({
  setUp: async () => {
    const model = defaultModelFile();
    hub = await startHub(model.path);
    // A store of the app's own: the default model linked in, the pulled one lands here.
    home = mkdtempSync(join(tmpdir(), 'doppler-e2e-store-'));
    mkdirSync(join(home, 'models'));
    symlinkSync(model.dir, join(home, 'models', DEFAULT_MODEL));
    process.env.DOPPLER_HOME = home;
    process.env.HF_ENDPOINT = `http://127.0.0.1:${hub.address().port}`;
  },
  tearDown: () => {
    hub?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  },
});

async function downloadRow(driver) {
  return find(driver, By.css(`[data-testid="download-row"][data-choice="${FILE}"]`), 30_000);
}

async function waitForStatus(driver, status, timeoutMs) {
  const row = await downloadRow(driver);
  await driver.wait(async () => (await row.getAttribute('data-status')) === status, timeoutMs, `the download becomes ${status}`);
  return row;
}

test('a model found on the Hub is pulled with progress, paused and resumed, loaded, and answers', async () => {
  const driver = await launchApp();
  try {
    await click(driver, byTestId('model-manager-button'));
    await find(driver, byTestId('model-manager'));
    await (await find(driver, byTestId('hub-search-input'))).sendKeys('smollm2');
    await click(driver, byTestId('hub-search-button'));
    await click(driver, By.css(`[data-testid="hub-result"][data-repo="${REPO}"]`));

    const choice = await find(driver, By.css(`[data-testid="repo-choice"][data-choice="${FILE}"]`), 30_000);
    const badge = await choice.findElement(byTestId('fit-badge'));
    assert.equal(await badge.getAttribute('data-fit'), 'fits', 'a 135M model fits any machine the tests run on');
    assert.match(await badge.getAttribute('title'), /weights .* KV cache .* scratch/);
    assert.equal((await driver.findElements(byTestId('repo-choice'))).length, 1, 'the README is no model');
    await screenshot(driver, '20-model-manager-repo');

    await (await choice.findElement(byTestId('choice-download'))).click();
    const row = await waitForStatus(driver, 'downloading', 30_000);
    const progress = await row.findElement(byTestId('download-progress'));
    await driver.wait(async () => Number(await progress.getAttribute('data-done')) > 0, 60_000, 'bytes arrive');
    await waitForText(driver, By.css(`[data-testid="download-row"][data-choice="${FILE}"] [data-testid="download-detail"]`), (text) => /of .*\/s/.test(text), 'the download shows its speed');
    await screenshot(driver, '21-model-manager-downloading');

    await click(driver, byTestId('download-pause'));
    await waitForStatus(driver, 'paused', 30_000);
    const pausedAt = Number(await (await (await downloadRow(driver)).findElement(byTestId('download-progress'))).getAttribute('data-done'));
    assert.ok(pausedAt > 0, 'a paused download keeps its bytes');
    await click(driver, byTestId('download-resume'));
    await waitForStatus(driver, 'done', DOWNLOAD_MS);
    assert.equal(rangeStarts[0], null, 'the first request asks for the whole file');
    assert.ok(rangeStarts.at(-1) > 0, `the resumed download asks for the rest with a Range: ${rangeStarts}`);
    await screenshot(driver, '22-model-manager-installed');

    // The lists settle as the finished download's row shrinks and the models list is read
    // again: a click can land mid-move, and is tried again then.
    const load = By.css(`[data-testid="installed-model"][data-model-id="${PULLED}"] [data-testid="installed-load"]`);
    await find(driver, load, 30_000);
    for (let attempt = 1; ; attempt++) {
      try {
        await click(driver, load);
        break;
      } catch (error) {
        if (error.name !== 'ElementClickInterceptedError' || attempt === 5) throw error;
        await sleep(300);
      }
    }

    const picker = await find(driver, byTestId('model-picker-button'), 30_000);
    await driver.wait(
      async () => (await textOf(driver, picker)).includes(PULLED) && (await picker.getAttribute('data-status')) === 'ready',
      MODEL_READY_MS,
      'the pulled model loads',
    );

    await click(driver, byTestId('new-chat'));
    // Enter sends: the "Model installed" toast may still cover the send button.
    await (await find(driver, byTestId('composer-input'))).sendKeys('Say hello to the new user.', Key.ENTER);
    const early = await waitForText(driver, PENDING, (text) => text.trim().length >= 5, 'the pulled model streams a reply', TOKENS_MS);
    await waitForText(driver, PENDING, (text) => text.trim().length > early.trim().length, 'more tokens arrive', TOKENS_MS);
    await screenshot(driver, '23-pulled-model-replies');
    // Quitting stops the reply (chat.test.mjs checks what is kept then).
  } finally {
    await quitApp(driver);
  }
});

test('a safetensors repository found by the search converts to Q4_K_M and is installed', async () => {
  const driver = await launchApp();
  try {
    await click(driver, byTestId('model-manager-button'));
    await find(driver, byTestId('model-manager'));
    await (await find(driver, byTestId('hub-search-input'))).sendKeys(ST_REPO);
    await click(driver, byTestId('hub-search-button'));
    // The search lists safetensors repositories too, to convert.
    const result = By.css(`[data-testid="hub-result"][data-repo="${ST_REPO}"]`);
    assert.equal(await (await find(driver, result, 30_000)).getAttribute('data-formats'), 'safetensors');
    assert.equal(await textOf(driver, await find(driver, By.css(`[data-repo="${ST_REPO}"] [data-testid="hub-result-action"]`))), 'Convert');
    await click(driver, result);
    await find(driver, byTestId('repo-convert'), 30_000);
    assert.equal((await driver.findElements(byTestId('repo-choice'))).length, 0, 'no GGUF to download');
    await (await find(driver, byTestId('convert-quant'))).sendKeys('Q4_K_M');
    await click(driver, byTestId('convert-start'));
    const detail = byTestId('convert-detail');
    await find(driver, detail, 30_000);
    await driver.wait(
      async () => ['done', 'failed'].includes(await (await find(driver, detail)).getAttribute('data-status')),
      CONVERT_MS,
      'the conversion ends',
    );
    assert.equal(await (await find(driver, detail)).getAttribute('data-status'), 'done', await textOf(driver, await find(driver, byTestId('repo-convert'))));
    assert.match(await textOf(driver, await find(driver, detail)), new RegExp(`Installed as ${CONVERTED}`));
    await find(driver, By.css(`[data-testid="installed-model"][data-model-id="${CONVERTED}"]`), 30_000);
    await screenshot(driver, '24-model-manager-converted');
  } finally {
    await quitApp(driver);
  }
});
