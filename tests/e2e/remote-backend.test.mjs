// The app chatting with a model that another DOPPLER serves: `doppler serve` runs on
// loopback, the app adds it as a remote backend through its settings, picks its model in the
// model menu, and a reply streams into the chat window, is stopped and kept.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { By } from 'selenium-webdriver';

import { byTestId, click, find, launchApp, quitApp, screenshot, textOf, useDriver, waitForText } from './app.mjs';

const CLI = process.env.DOPPLER_E2E_CLI;
const MODEL = 'smollm2-135m-instruct';
// `doppler serve` loads the model (and compiles its pipelines on lavapipe) before it listens.
const SERVER_READY_MS = 240_000;
const TOKENS_MS = 180_000;
const PENDING = By.css('[data-testid="message"][data-pending="true"] [data-testid="message-content"]');
const LAST_ASSISTANT = By.css('[data-testid="message"][data-role="assistant"]:not([data-pending]):last-child');

let server;
let baseUrl;

/** A port nobody listens on right now. */
async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

useDriver({
  setUp: async () => {
    assert.ok(CLI, 'DOPPLER_E2E_CLI names the doppler CLI: run the end-to-end tests with `make e2e`');
    const port = await freePort();
    server = spawn(CLI, ['serve', '--model', MODEL, '--port', String(port)], { stdio: ['ignore', 'inherit', 'inherit'] });
    const exited = new Promise((_, reject) => server.once('exit', (code) => reject(new Error(`doppler serve exited (${code})`))));
    exited.catch(() => {});
    baseUrl = `http://127.0.0.1:${port}/v1`;
    const deadline = Date.now() + SERVER_READY_MS;
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
      } catch {
        // still loading the model
      }
      if (Date.now() > deadline) throw new Error('doppler serve did not start listening');
      await Promise.race([sleep(250), exited]);
    }
  },
  tearDown: () => server?.kill(),
});

test('a model served by another DOPPLER on loopback chats through the app as a remote backend', async () => {
  const driver = await launchApp();
  try {
    await click(driver, byTestId('settings-button'));
    await (await find(driver, byTestId('remote-name'))).sendKeys('Loopback DOPPLER');
    const url = await find(driver, byTestId('remote-url'));
    await url.clear();
    await url.sendKeys(baseUrl);
    await click(driver, byTestId('remote-add'));
    await driver.wait(
      async () => (await driver.findElements(By.css('[data-testid="remote-backend-row"], [data-testid="remote-add-error"]'))).length > 0,
      30_000,
      'the backend is added, or an error says why not',
    );
    const refused = await driver.findElements(byTestId('remote-add-error'));
    if (refused.length > 0) {
      await screenshot(driver, 'remote-00-refused');
      assert.fail(`adding the backend failed: ${await textOf(driver, refused[0])}`);
    }
    const row = await find(driver, byTestId('remote-backend-row'));
    await waitForText(driver, byTestId('remote-backend-row'), (text) => /1 model\b/.test(text), 'the backend lists its model');
    assert.match(await textOf(driver, row), new RegExp(baseUrl.replaceAll('.', '\\.')));
    await screenshot(driver, 'remote-01-backend-added');
    await click(driver, byTestId('settings-button'));

    await click(driver, byTestId('model-picker-button'));
    const remoteModel = await find(driver, By.css(`[data-testid="remote-model-row"][data-model-id$="/${MODEL}"]`));
    await screenshot(driver, 'remote-02-model-menu');
    await (await remoteModel.findElement(byTestId('use-remote-model'))).click();
    await click(driver, byTestId('model-picker-button'));
    const picker = await find(driver, byTestId('model-picker-button'));
    assert.equal(await picker.getAttribute('data-status'), 'ready');
    assert.match(await textOf(driver, picker), new RegExp(MODEL));

    await click(driver, byTestId('new-chat'));
    await (await find(driver, byTestId('composer-input'))).sendKeys('Tell me a long story about the sea.');
    await click(driver, byTestId('send-button'));
    const early = await waitForText(driver, PENDING, (text) => text.trim().length >= 10, 'tokens stream in from the remote server', TOKENS_MS);
    const later = await waitForText(driver, PENDING, (text) => text.trim().length > early.trim().length, 'more tokens arrive', TOKENS_MS);
    await screenshot(driver, 'remote-03-streaming');

    await click(driver, byTestId('stop-button'));
    await driver.wait(async () => (await driver.findElements(By.css('[data-pending="true"]'))).length === 0, 30_000, 'the reply stops');
    const reply = await find(driver, LAST_ASSISTANT);
    const saved = await textOf(driver, await reply.findElement(byTestId('message-content')));
    assert.ok(saved.length >= later.trim().length - 5, `the stopped reply keeps what streamed (${saved.length} vs ${later.length} characters)`);
    assert.match(await textOf(driver, await reply.findElement(byTestId('message-stats'))), /Stopped/);
    await screenshot(driver, 'remote-04-stopped');
  } catch (error) {
    await screenshot(driver, 'remote-failure');
    throw error;
  } finally {
    await quitApp(driver);
  }
});
