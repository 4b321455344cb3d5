// Starting tauri-driver, launching the app through it, and small helpers for the specs.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { Builder, By, until } from 'selenium-webdriver';

const APP = required('DOPPLER_E2E_APP');
const ARTIFACTS = required('DOPPLER_E2E_ARTIFACTS');
const DRIVER_PORT = 4444;
const DRIVER_URL = `http://127.0.0.1:${DRIVER_PORT}`;
// Quitting waits for the running decode step, seconds on a busy lavapipe.
const QUIT_MS = 30_000;
const CLOSE_AGAIN_MS = 5_000;
const WINDOW_TITLE = 'DOPPLER';
// Debian's Python, which has python3-xlib (close_window.py), whatever python3 is first on PATH.
const SYSTEM_PYTHON = '/usr/bin/python3';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the end-to-end tests with \`make e2e\``);
  return value;
}

/**
 * Runs tauri-driver for a spec file's tests: started before them (after `setUp`, where the file
 * starts servers of its own) and stopped after them (then `tearDown`).
 */
export function useDriver({ setUp, tearDown } = {}) {
  let driver;
  before(async () => {
    await setUp?.();
    driver = await startDriver();
  });
  after(async () => {
    driver?.kill();
    await tearDown?.();
  });
}

/** Starts tauri-driver (which starts WebKitWebDriver for each session) and waits for it. */
async function startDriver() {
  const driver = spawn(process.env.TAURI_DRIVER ?? 'tauri-driver', ['--port', String(DRIVER_PORT)], { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((_, reject) => driver.once('exit', (code) => reject(new Error(`tauri-driver exited (${code})`))));
  exited.catch(() => {});
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      if ((await fetch(`${DRIVER_URL}/status`)).ok) return driver;
    } catch {
      // not listening yet
    }
    await Promise.race([sleep(100), exited]);
  }
  driver.kill();
  throw new Error('tauri-driver did not start listening');
}

/** Launches the app in a new WebDriver session. */
export async function launchApp() {
  return new Builder()
    .usingServer(DRIVER_URL)
    .withCapabilities({ browserName: 'wry', 'tauri:options': { application: APP } })
    .build();
}

/** Whether the app's process is running (matched by its full path). */
function appRunning() {
  return spawnSync('pgrep', ['-f', `^${APP}`]).status === 0;
}

/**
 * Kills the app with SIGKILL, as a crash or a power cut would, and ends the WebDriver session.
 * Returns whether the process was gone within a few seconds.
 */
export async function killApp(driver) {
  spawnSync('pkill', ['-KILL', '-f', `^${APP}`]);
  for (let waited = 0; appRunning() && waited < 5_000; waited += 100) await sleep(100);
  const gone = !appRunning();
  try {
    await driver.quit();
  } catch {
    // the session died with the app
  }
  return gone;
}

/**
 * Closes the window as a user would (through the window manager's close message) and waits
 * for the app to quit by itself: it stops a running generation and saves the reply first.
 * Returns whether it quit in time; the WebDriver session ends either way.
 *
 * The close is sent again every few seconds until the app quits: GTK drops a close message
 * that arrives while WebDriver's synthesized input still holds the window (seen after clicks
 * and screenshots, with the app idle and its window mapped; a second close then quits it).
 */
export async function quitApp(driver) {
  let quit = false;
  for (let waited = 0; waited < QUIT_MS && !quit; waited += 100) {
    if (waited % CLOSE_AGAIN_MS === 0) closeWindow();
    await sleep(100);
    quit = !appRunning();
  }
  try {
    // Kills the app if it is still there.
    await driver.quit();
  } catch {
    // the session ended with the app
  }
  return quit;
}

/** Sends the close message to the app's window, if it still has one. */
function closeWindow() {
  spawnSync(SYSTEM_PYTHON, [join(import.meta.dirname, 'close_window.py'), WINDOW_TITLE], { stdio: 'ignore' });
}

export async function screenshot(driver, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  // WebKitWebDriver takes the picture at the next paint, and an idle page never paints: a
  // brief animation makes one.
  await driver.executeScript("document.documentElement.animate([{ opacity: 1 }, { opacity: 0.999 }, { opacity: 1 }], { duration: 200 })");
  const file = join(ARTIFACTS, `${name}.png`);
  writeFileSync(file, await driver.takeScreenshot(), 'base64');
  console.log(`screenshot: ${file}`);
}

export const byTestId = (id) => By.css(`[data-testid="${id}"]`);

// Loading the model compiles its GPU pipelines, and lavapipe decodes on the CPU: generous limits.
export const MODEL_READY_MS = 240_000;

/** Waits until the model picker says the active model is loaded (at startup: the default one). */
export async function waitForModel(driver) {
  const picker = await find(driver, byTestId('model-picker-button'), 30_000);
  await driver.wait(async () => (await picker.getAttribute('data-status')) === 'ready', MODEL_READY_MS, 'the model loads');
}

export async function find(driver, locator, timeoutMs = 15_000) {
  const element = await driver.wait(until.elementLocated(locator), timeoutMs, `waiting for ${locator}`);
  await driver.wait(until.elementIsVisible(element), timeoutMs, `waiting for ${locator} to show`);
  return element;
}

export async function click(driver, locator) {
  const element = await find(driver, locator);
  await driver.wait(until.elementIsEnabled(element), 15_000, `waiting for ${locator} to be enabled`);
  await element.click();
}

/**
 * The element's rendered text (`innerText`). WebKitWebDriver's Get Element Text answers ""
 * for text in a box with `text-overflow: ellipsis`, which the titles use.
 */
export async function textOf(driver, element) {
  return driver.executeScript('return arguments[0].innerText', element);
}

/** Waits until `predicate` holds for the text of the element at `locator`; returns the text. */
export async function waitForText(driver, locator, predicate, description, timeoutMs = 60_000) {
  let last = '';
  try {
    await driver.wait(
      async () => {
        const elements = await driver.findElements(locator);
        if (elements.length === 0) return false;
        last = await textOf(driver, elements.at(-1));
        return predicate(last);
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${description}: last text was ${JSON.stringify(last)} (${error.message})`);
  }
  return last;
}
