// The profiler view during a reply, in the real app under Xvfb with the default model: the
// kernel table fills with timed kernels, their achieved GB/s and kernel variants, the roofline
// draws them against the adapter's measured peak bandwidth, the tok/s chart gets points, and
// the memory bar shows the loaded model. Screenshots go to $DOPPLER_E2E_ARTIFACTS.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { By } from 'selenium-webdriver';

import { byTestId, click, find, launchApp, quitApp, screenshot, textOf, waitForModel, useDriver, waitForText } from './app.mjs';

// One decode step in 32 is timed: the table fills after a few dozen tokens.
const PROFILE_MS = 180_000;
const PROMPT = 'Tell me a long story about a clockmaker who repairs the clocks of a whole city, one street at a time.';
const PENDING = By.css('[data-testid="message"][data-pending="true"] [data-testid="message-content"]');
const KERNEL_ROWS = By.css('[data-testid="kernel-table"] tbody tr.kernel');

useDriver();

test('the profiler shows live kernel timings, speed and memory during a reply', async () => {
  const driver = await launchApp();
  try {
    await waitForModel(driver);

    await click(driver, byTestId('new-chat'));
    await (await find(driver, byTestId('composer-input'))).sendKeys(PROMPT);
    await click(driver, byTestId('send-button'));
    await waitForText(driver, PENDING, (text) => text.trim().length >= 5, 'the reply starts streaming', PROFILE_MS);

    await click(driver, byTestId('profiler-button'));
    await find(driver, byTestId('profiler-panel'));

    await driver.wait(async () => (await driver.findElements(KERNEL_ROWS)).length > 0, PROFILE_MS, 'sampled decode steps fill the kernel table');
    const rows = await driver.findElements(KERNEL_ROWS);
    const cells = await Promise.all(rows.map((row) => row.findElements(By.css('td'))));
    const names = await Promise.all(cells.map((row) => textOf(driver, row[0])));
    const totals = await Promise.all(cells.map(async (row) => Number(await textOf(driver, row[3]))));
    assert.ok(names.every((name) => name.trim().length > 0), `every kernel has a name: ${names}`);
    assert.ok(names.some((name) => /attention|attn_|ffn_/.test(name)), `the layers' kernels are among them: ${names}`);
    assert.ok(totals.every((ms) => Number.isFinite(ms) && ms >= 0), `times are numbers: ${totals}`);
    assert.ok(totals.some((ms) => ms > 0), `the GPU took time: ${totals}`);
    // The weight matrix products show the bandwidth they achieved; attention reads no weights.
    const bandwidths = await Promise.all(cells.map((row) => textOf(driver, row[6])));
    const bandwidthsOf = (pattern) => bandwidths.filter((_, i) => pattern.test(names[i])).map((text) => text.trim());
    const products = bandwidthsOf(/ffn_down|attn_output/);
    assert.ok(products.length > 0 && products.every((text) => Number(text) > 0), `products have a GB/s: ${names} / ${bandwidths}`);
    const attention = bandwidthsOf(/attention/);
    assert.ok(attention.length > 0 && attention.every((text) => text === ''), `attention has none: ${names} / ${bandwidths}`);

    // A product unfolds into the variant its pipeline was compiled as: shader, entry, threads, defines.
    const product = names.findIndex((name) => /ffn_down|attn_output/.test(name));
    await driver.executeScript('arguments[0].click()', await cells[product][0].findElement(By.css('button')));
    const variant = await waitForText(driver, byTestId('kernel-variant'), (text) => text.includes('.wgsl:'), 'the kernel variant unfolds');
    assert.match(variant, /matmul_\w+\.wgsl:\w+\s+\d+×\d+×\d+ threads\s+[\s\S]*TYPE_/, variant);

    // The adapter's peak bandwidth, timed on a kernel streaming a large buffer, is the roofline's ceiling.
    const peak = await waitForText(driver, byTestId('adapter-peak-bandwidth'), (text) => /GB\/s/.test(text), 'the peak bandwidth shows');
    assert.ok(Number(peak.match(/([\d.]+) GB\/s/)?.[1]) > 0, peak);
    const roofline = await find(driver, byTestId('roofline-chart'));
    assert.ok(Number(await roofline.getAttribute('data-bars')) > 0, 'the roofline has bars');
    assert.ok(Number(await roofline.getAttribute('data-peak')) > 0, 'the roofline has its peak');
    assert.match(await textOf(driver, await find(driver, byTestId('roofline-note'))), /the best kernel reaches [\d.]+% of it/);

    const chart = await find(driver, byTestId('throughput-chart'));
    await driver.wait(async () => Number(await chart.getAttribute('data-points')) > 0, PROFILE_MS, 'the tok/s chart gets points');
    assert.equal((await chart.findElements(By.css('canvas'))).length, 1, 'the chart draws');
    const speed = await textOf(driver, await find(driver, byTestId('profiler-speed')));
    assert.match(speed, /Decode\s+[\d.]+ tok\/s/, speed);

    const model = await waitForText(driver, byTestId('memory-model'), (text) => text.includes('SmolLM2'), 'the memory bar shows the loaded model');
    assert.match(model, /\d+(\.\d)? [kMG]B at [\d,]+ tokens of context/, model);
    assert.ok((await textOf(driver, await find(driver, byTestId('memory-tier')))).trim().length > 0, 'the memory tier is named');
    assert.ok((await textOf(driver, await find(driver, byTestId('adapter-name')))).trim().length > 0, 'the adapter is named');
    await screenshot(driver, 'profiler-01-live');

    await click(driver, byTestId('stop-button'));
    await driver.wait(async () => (await driver.findElements(By.css('[data-pending="true"]'))).length === 0, 30_000, 'the reply stops');
    // The finished reply adds its prefill speed and the engine's time to first token.
    await waitForText(driver, byTestId('profiler-speed'), (text) => /Prefill\s+[\d.]+ tok\/s/.test(text), 'the prefill speed shows');
    await driver.executeScript("arguments[0].scrollTop = arguments[0].scrollHeight", await find(driver, byTestId('profiler-panel')));
    await screenshot(driver, 'profiler-02-after-reply');
  } finally {
    await quitApp(driver);
  }
});
