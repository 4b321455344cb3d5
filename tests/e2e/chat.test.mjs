// The real app under Xvfb, driven through tauri-driver and WebKitWebDriver, with the real
// engine and the default model: a reply streams, is stopped, survives a restart; markup
// injected into a reply stays inert. Screenshots go to $DOPPLER_E2E_ARTIFACTS.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { By } from 'selenium-webdriver';

import { byTestId, click, find, killApp, launchApp, quitApp, screenshot, textOf, waitForModel, useDriver, waitForText } from './app.mjs';

// Lavapipe decodes on the CPU: generous limits.
const TOKENS_MS = 180_000;
const PROMPT = 'Write a long story about a lighthouse keeper who finds a mysterious map. Describe every day of his journey in detail.';
const FOLLOW_UP = 'Now tell me about the sea, at length.';
const PENDING = By.css('[data-testid="message"][data-pending="true"] [data-testid="message-content"]');
const LAST_ASSISTANT = By.css('[data-testid="message"][data-role="assistant"]:not([data-pending]):last-child');

useDriver();

async function openConversation(driver, title) {
  const item = await find(driver, By.xpath(`//li[@data-testid="conversation-item"]//button[@title=${JSON.stringify(title)}]`));
  await item.click();
  await waitForText(driver, byTestId('chat-title'), (text) => text === title, `the conversation "${title}" opens`);
}

test('a streamed reply is stopped, kept, and still there after a restart; closing mid-reply keeps it too', async () => {
  let driver = await launchApp();
  let title;
  let stoppedReply;
  try {
    await waitForModel(driver);
    await screenshot(driver, '01-model-ready');

    await click(driver, byTestId('new-chat'));
    await (await find(driver, byTestId('composer-input'))).sendKeys(PROMPT);
    await click(driver, byTestId('send-button'));

    const early = await waitForText(driver, PENDING, (text) => text.trim().length >= 15, 'tokens stream into the reply', TOKENS_MS);
    const later = await waitForText(driver, PENDING, (text) => text.trim().length > early.trim().length, 'more tokens arrive', TOKENS_MS);
    await screenshot(driver, '02-streaming');
    assert.ok(later.startsWith(early.trim().slice(0, 10)), 'the reply grows from its beginning');

    await click(driver, byTestId('stop-button'));
    await driver.wait(async () => (await driver.findElements(By.css('[data-pending="true"]'))).length === 0, 30_000, 'the reply stops');
    const reply = await find(driver, LAST_ASSISTANT);
    stoppedReply = await textOf(driver, await reply.findElement(byTestId('message-content')));
    const stats = await textOf(driver, await reply.findElement(byTestId('message-stats')));
    assert.match(stats, /Stopped/, 'a stopped reply says so');
    assert.match(stats, /\d+ tokens · \d+ in prompt/);
    assert.match(stats, /[\d.]+ tok\/s/);
    assert.ok(stoppedReply.length >= later.trim().length - 5, `the saved reply keeps what was generated (${stoppedReply.length} vs ${later.length} characters)`);
    await (await find(driver, byTestId('send-button'))).isDisplayed();
    title = await textOf(driver, await find(driver, byTestId('chat-title')));
    assert.ok(PROMPT.startsWith(title.replace(/…$/, '')), `the conversation is named after its first message: ${title}`);
    await screenshot(driver, '03-stopped');
  } finally {
    await quitApp(driver);
  }

  driver = await launchApp();
  try {
    await openConversation(driver, title);
    const messages = await driver.findElements(byTestId('message'));
    assert.equal(messages.length, 2, 'the question and the partial reply');
    assert.equal(await textOf(driver, await messages[0].findElement(byTestId('message-content'))), PROMPT);
    assert.equal(await textOf(driver, await messages[1].findElement(byTestId('message-content'))), stoppedReply);
    assert.match(await textOf(driver, await messages[1].findElement(byTestId('message-stats'))), /Stopped/);
    await screenshot(driver, '04-after-restart');

    // Closing the window mid-reply stops the generation, and what it generated is kept.
    await waitForModel(driver);
    await (await find(driver, byTestId('composer-input'))).sendKeys(FOLLOW_UP);
    await click(driver, byTestId('send-button'));
    await waitForText(driver, PENDING, (text) => text.trim().length >= 5, 'the follow-up reply streams', TOKENS_MS);
    const quit = await quitApp(driver);
    driver = null;
    assert.ok(quit, 'the app quits when its window closes, mid-reply');
  } finally {
    if (driver) await quitApp(driver);
  }

  driver = await launchApp();
  try {
    await openConversation(driver, title);
    await waitForText(driver, By.css('[data-testid="message"]:last-child [data-testid="message-stats"]'), (text) => /Stopped/.test(text), 'the reply cut off by closing the window is saved');
    const messages = await driver.findElements(byTestId('message'));
    assert.equal(messages.length, 4);
    assert.equal(await textOf(driver, await messages[2].findElement(byTestId('message-content'))), FOLLOW_UP);
    assert.notEqual(await textOf(driver, await messages[3].findElement(byTestId('message-content'))), '');
    await screenshot(driver, '05-closed-mid-reply');
  } finally {
    await quitApp(driver);
  }
});

test('a reply cut off by killing the app (SIGKILL) is there after a restart, marked interrupted', async () => {
  let driver = await launchApp();
  let title;
  let streamed;
  try {
    await waitForModel(driver);
    await click(driver, byTestId('new-chat'));
    await (await find(driver, byTestId('composer-input'))).sendKeys(PROMPT);
    await click(driver, byTestId('send-button'));
    await waitForText(driver, PENDING, (text) => text.trim().length >= 20, 'tokens stream into the reply', TOKENS_MS);
    // The reply's text is saved every second (or 32 tokens): wait past one save.
    await driver.sleep(2_500);
    streamed = (await textOf(driver, await find(driver, PENDING))).trim();
    title = await textOf(driver, await find(driver, byTestId('chat-title')));
    assert.ok(await killApp(driver), 'the app is killed');
    driver = null;
  } finally {
    if (driver) await quitApp(driver);
  }

  driver = await launchApp();
  try {
    await openConversation(driver, title);
    const messages = await driver.findElements(byTestId('message'));
    assert.equal(messages.length, 2, 'the question and the partial reply');
    const saved = await textOf(driver, await messages[1].findElement(byTestId('message-content')));
    assert.ok(saved.length >= 10, `the reply is there up to its last save: "${saved}"`);
    assert.ok(streamed.startsWith(saved.slice(0, 10)), `the saved reply is the streamed one: "${saved}" vs "${streamed}"`);
    assert.match(await textOf(driver, await messages[1].findElement(byTestId('message-stats'))), /Interrupted/);
    await screenshot(driver, '07-after-sigkill');
  } finally {
    await quitApp(driver);
  }
});

test('markup injected into a reply stays inert', async () => {
  const driver = await launchApp();
  try {
    await openConversation(driver, 'Injected markup');
    const content = await find(driver, By.css('[data-testid="message"][data-role="assistant"] [data-testid="message-content"]'));
    const text = await textOf(driver, content);
    assert.match(text, /<img src=x onerror=/, 'raw HTML is shown as text');
    assert.match(text, /<script>/);
    assert.deepEqual(await content.findElements(By.css('img, script, iframe, [onerror], [onclick]')), [], 'no element from the model runs');

    assert.match(text, /click me/);
    assert.deepEqual(await content.findElements(By.xpath('.//a[contains(., "click me")]')), [], 'the javascript: link is plain text');
    const safe = await content.findElement(By.xpath('.//a[normalize-space()="the docs"]'));
    assert.equal(await safe.getAttribute('href'), 'https://example.com/docs');
    assert.deepEqual(await content.findElements(By.css('a[href^="javascript"], [href^="data:"]')), []);

    const state = await driver.executeScript('return { pwned: window.__pwned ?? null, href: location.href, scripts: document.scripts.length }');
    assert.equal(state.pwned, null, 'no injected script or handler ran');
    assert.match(state.href, /^(tauri:\/\/localhost|http:\/\/tauri\.localhost)/, 'the webview did not navigate');
    await screenshot(driver, '06-injected-markup');

    // The webview reaches the app's own commands and nothing else: no window, file or shell API.
    const calls = await driver.executeAsyncScript(`
      const done = arguments[arguments.length - 1];
      const invoke = window.__TAURI_INTERNALS__.invoke;
      Promise.allSettled([
        invoke('app_status'),
        invoke('plugin:window|close', { label: 'main' }),
        invoke('plugin:fs|read_text_file', { path: '/etc/passwd' }),
        invoke('plugin:shell|execute', { program: 'sh', args: ['-c', 'id'] }),
      ]).then((results) => done(results.map((result) => (result.status === 'fulfilled' ? 'ok' : String(result.reason)))));`);
    assert.equal(calls[0], 'ok');
    for (const refusal of calls.slice(1)) assert.match(refusal, /not allowed/);
  } finally {
    await quitApp(driver);
  }
});
