// The real app under Xvfb with the default model (SmolLM2, trained for 8192 tokens): its context
// is chosen in the settings panel, which loads the model again with it; the choice is kept for
// the next start and can go back to the default. Screenshots go to $DOPPLER_E2E_ARTIFACTS.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { By, Key } from 'selenium-webdriver';

import { byTestId, click, find, launchApp, MODEL_READY_MS, quitApp, screenshot, textOf, waitForModel, useDriver, waitForText } from './app.mjs';

const MODEL_ROW = By.css('[data-testid="model-row"][data-model-id="smollm2-135m-instruct"]');

useDriver();

/** Opens the model picker and waits until the loaded model's row says it holds `context` tokens. */
async function waitForLoadedContext(driver, context) {
  if ((await driver.findElements(byTestId('model-panel'))).length === 0) await click(driver, byTestId('model-picker-button'));
  await waitForText(driver, MODEL_ROW, (text) => text.includes(`${context} ctx`), `the model is loaded with ${context} tokens`, MODEL_READY_MS);
  await click(driver, byTestId('model-picker-button'));
}

async function contextInput(driver) {
  if ((await driver.findElements(byTestId('settings-panel'))).length === 0) await click(driver, byTestId('settings-button'));
  return find(driver, byTestId('model-context'));
}

test("a model's context is chosen in the settings, loads the model again, and is kept for the next start", async () => {
  let driver = await launchApp();
  try {
    await waitForModel(driver);
    await waitForLoadedContext(driver, '8,192');
    const input = await contextInput(driver);
    assert.equal(await input.getAttribute('value'), '8192', 'the default is the model\'s training context, at most 8192');
    const estimate = await textOf(driver, await find(driver, byTestId('model-context-estimate')));
    assert.match(estimate, /on the GPU \(.+ KV cache\)/);
    await screenshot(driver, 'context-01-default');

    await input.clear();
    await input.sendKeys('2048', Key.TAB);
    await waitForText(driver, byTestId('model-context-estimate'), (text) => text !== estimate, 'the estimate follows the choice');
    await waitForLoadedContext(driver, '2,048');
    await screenshot(driver, 'context-02-chosen');
  } finally {
    await quitApp(driver);
  }

  driver = await launchApp();
  try {
    await waitForModel(driver);
    await waitForLoadedContext(driver, '2,048');
    assert.equal(await (await contextInput(driver)).getAttribute('value'), '2048', 'the choice is kept');
    await click(driver, byTestId('model-context-default'));
    await waitForLoadedContext(driver, '8,192');
    assert.equal(await (await contextInput(driver)).getAttribute('value'), '8192');
  } finally {
    await quitApp(driver);
  }
});
