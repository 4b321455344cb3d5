import { beforeEach, describe, expect, it, vi } from 'vitest';

import type { Conversion, Download } from '../api';

const api = vi.hoisted(() => ({
  watchDownloads: vi.fn(),
  searchModels: vi.fn(),
  repoFiles: vi.fn(),
  startDownload: vi.fn(),
  pauseDownload: vi.fn(),
  resumeDownload: vi.fn(),
  cancelDownload: vi.fn(),
  recommendedModels: vi.fn(),
  watchConversions: vi.fn(),
  startConversion: vi.fn(),
  cancelConversion: vi.fn(),
  resumeConversion: vi.fn(),
  dismissConversion: vi.fn(),
}));
const models = vi.hoisted(() => ({ refresh: vi.fn(), installed: [] as { id: string }[] }));

vi.mock('../api', async (importOriginal) => ({ ...(await importOriginal<typeof import('../api')>()), api }));
vi.mock('./models.svelte', () => ({ models }));

const { fitLabel, formatEta, formatLabel, isRepoId, modelManager, resultAction } = await import('./model-manager.svelte');
const { toasts } = await import('./toasts.svelte');

function download(overrides: Partial<Download> = {}): Download {
  return {
    id: 1,
    repo: 'org/Tiny-GGUF',
    revision: 'main',
    choice: 'tiny-Q8_0.gguf',
    label: 'Q8_0',
    total: 1000,
    done: 0,
    bytesPerSecond: 0,
    etaSeconds: null,
    status: 'downloading',
    modelId: null,
    message: null,
    ...overrides,
  };
}

beforeEach(() => {
  vi.clearAllMocks();
  modelManager.downloads = [];
});

describe('model manager state', () => {
  it('takes the list, then the changes pushed over the channel', async () => {
    let push: (download: Download) => void = () => {};
    api.watchDownloads.mockImplementation(async (onChange: (download: Download) => void) => {
      push = onChange;
      return [download({ status: 'paused', done: 300 })];
    });
    await modelManager.watch();
    expect(modelManager.downloads.map((d) => d.status)).toEqual(['paused']);

    push(download({ done: 600, bytesPerSecond: 100, etaSeconds: 4 }));
    expect(modelManager.downloads).toHaveLength(1);
    expect(modelManager.downloads[0].done).toBe(600);
    expect(models.refresh).not.toHaveBeenCalled();

    // A finished download makes the models list read again: the model can be loaded.
    push(download({ done: 1000, status: 'done', modelId: 'tiny-q8_0' }));
    expect(models.refresh).toHaveBeenCalledTimes(1);
    expect(modelManager.downloadOf('org/Tiny-GGUF', 'tiny-Q8_0.gguf')?.modelId).toBe('tiny-q8_0');

    await modelManager.watch();
    expect(api.watchDownloads).toHaveBeenCalledTimes(1);

    // Once its model is deleted, a finished download no longer stands in the way of another.
    models.installed = [{ id: 'tiny-q8_0' }];
    expect(modelManager.liveDownloadOf('org/Tiny-GGUF', 'tiny-Q8_0.gguf')?.status).toBe('done');
    models.installed = [];
    expect(modelManager.liveDownloadOf('org/Tiny-GGUF', 'tiny-Q8_0.gguf')).toBeUndefined();
  });

  it('starts, pauses, resumes and cancels through the app', async () => {
    api.startDownload.mockResolvedValue(download({ id: 4 }));
    api.pauseDownload.mockResolvedValue(download({ id: 4, status: 'paused' }));
    api.resumeDownload.mockResolvedValue(download({ id: 4 }));
    api.cancelDownload.mockResolvedValue(undefined);

    modelManager.downloads = [download({ id: 3, status: 'failed', message: 'checksum mismatch' })];
    await modelManager.start('org/Tiny-GGUF', 'tiny-Q8_0.gguf');
    expect(api.startDownload).toHaveBeenCalledWith('org/Tiny-GGUF', 'tiny-Q8_0.gguf');
    expect(modelManager.downloads.map((d) => d.id)).toEqual([4]);
    await modelManager.pause(4);
    expect(modelManager.downloads[0].status).toBe('paused');
    await modelManager.resume(4);
    expect(modelManager.downloads[0].status).toBe('downloading');
    await modelManager.cancel(4);
    expect(modelManager.downloads).toEqual([]);
  });

  it('keeps only the answer to the latest search', async () => {
    let answerFirst: (value: unknown) => void = () => {};
    api.searchModels
      .mockImplementationOnce(() => new Promise((resolve) => (answerFirst = resolve)))
      .mockResolvedValueOnce([{ id: 'org/second', downloads: 1, likes: null }]);
    const first = modelManager.search('first');
    await modelManager.search('second');
    answerFirst([{ id: 'org/first', downloads: 1, likes: null }]);
    await first;
    expect(modelManager.results?.map((model) => model.id)).toEqual(['org/second']);
    expect(modelManager.searching).toBe(false);
  });

  it('shows a repository, or why it cannot', async () => {
    api.repoFiles.mockRejectedValueOnce('org/gated needs access (HTTP 401)');
    await modelManager.openRepo('org/gated');
    expect(modelManager.repoError).toMatch(/needs access/);
    api.repoFiles.mockResolvedValueOnce({ repo: 'org/Tiny-GGUF', memory: { budget: 1e9, tier: 'cpu', kvF16: true }, contextLen: 8192, choices: [], convertible: false });
    await modelManager.openRepo('org/Tiny-GGUF');
    expect(modelManager.repoError).toBeNull();
    expect(modelManager.repo?.repo).toBe('org/Tiny-GGUF');
  });

  it('converts a repository, following its changes until the model is installed', async () => {
    const conversion = (overrides: Partial<Conversion> = {}): Conversion => ({
      id: 1,
      repo: 'org/Tiny',
      quant: 'Q4_K_M',
      status: 'downloading',
      done: 0,
      total: 0,
      modelId: null,
      message: null,
      ...overrides,
    });
    let push: (conversion: Conversion) => void = () => {};
    api.watchConversions.mockImplementation(async (onChange: (conversion: Conversion) => void) => {
      push = onChange;
      return [conversion({ id: 0, repo: 'org/Other', status: 'failed', message: 'no tokenizer.json' })];
    });
    api.startConversion.mockResolvedValue(conversion());
    await modelManager.watchConversions();
    expect(modelManager.conversionOf('org/Other')?.status).toBe('failed');

    await modelManager.convert('org/Tiny', 'Q4_K_M');
    expect(api.startConversion).toHaveBeenCalledWith('org/Tiny', 'Q4_K_M');
    push(conversion({ status: 'converting', done: 50, total: 100 }));
    expect(modelManager.conversionOf('org/Tiny')?.done).toBe(50);
    expect(models.refresh).not.toHaveBeenCalled();
    push(conversion({ status: 'done', done: 100, total: 100, modelId: 'tiny-rdrr' }));
    expect(models.refresh).toHaveBeenCalledTimes(1);
    expect(modelManager.conversionOf('org/Tiny')?.modelId).toBe('tiny-rdrr');
    expect(modelManager.conversions).toHaveLength(2);
  });

  it('cancels a conversion and shows it cancelled, without a failure toast or a models refresh', async () => {
    const running: Conversion = {
      id: 5,
      repo: 'org/Slow',
      quant: 'Q8_0',
      status: 'downloading',
      done: 10,
      total: 100,
      modelId: null,
      message: null,
    };
    modelManager.applyConversion(running, false);
    api.cancelConversion.mockResolvedValue(undefined);
    const toastsShown = vi.spyOn(toasts, 'show');
    await modelManager.cancelConversion(5);
    expect(api.cancelConversion).toHaveBeenCalledWith(5);
    modelManager.applyConversion({ ...running, status: 'cancelled', message: 'Cancelled: nothing was installed' });
    expect(modelManager.conversionOf('org/Slow')?.status).toBe('cancelled');
    expect(models.refresh).not.toHaveBeenCalled();
    expect(toastsShown).not.toHaveBeenCalled();

    api.cancelConversion.mockRejectedValue('there is no conversion 9');
    await modelManager.cancelConversion(9);
    expect(toastsShown).toHaveBeenCalledWith('error', 'Could not cancel the conversion', 'there is no conversion 9');
  });

  it('resumes a cancelled conversion, replaces it when converted again, and dismisses an ended one', async () => {
    const cancelled: Conversion = {
      id: 7,
      repo: 'org/Paused',
      quant: 'F16',
      status: 'cancelled',
      done: 10,
      total: 100,
      modelId: null,
      message: 'Cancelled',
    };
    modelManager.applyConversion(cancelled, false);
    api.resumeConversion.mockResolvedValue({ ...cancelled, status: 'downloading', message: null });
    await modelManager.resumeConversion(7);
    expect(api.resumeConversion).toHaveBeenCalledWith(7);
    expect(modelManager.conversionOf('org/Paused')?.status).toBe('downloading');

    modelManager.applyConversion({ ...cancelled, status: 'failed', message: 'the Hub went away' }, false);
    api.startConversion.mockResolvedValue({ ...cancelled, id: 8, status: 'downloading', message: null });
    await modelManager.convert('org/Paused', 'F16');
    expect(modelManager.conversions.filter((c) => c.repo === 'org/Paused').map((c) => c.id)).toEqual([8]);

    modelManager.applyConversion({ ...cancelled, id: 8, status: 'done', modelId: 'paused-rdrr' }, false);
    api.dismissConversion.mockResolvedValue(undefined);
    await modelManager.dismissConversion(8);
    expect(api.dismissConversion).toHaveBeenCalledWith(8);
    expect(modelManager.conversionOf('org/Paused')).toBeUndefined();

    const toastsShown = vi.spyOn(toasts, 'show');
    api.resumeConversion.mockRejectedValue('conversion 8 is not cancelled or failed');
    await modelManager.resumeConversion(8);
    expect(toastsShown).toHaveBeenCalledWith('error', 'Could not resume the conversion', 'conversion 8 is not cancelled or failed');
  });

  it('opens a search result to download its GGUF files, or to convert a safetensors-only repository', () => {
    const result = (formats: ('gguf' | 'safetensors')[]) => ({ id: 'org/m', downloads: 1, likes: 0, formats });
    expect(resultAction(result(['gguf']))).toBe('Download');
    expect(resultAction(result(['gguf', 'safetensors']))).toBe('Download');
    expect(resultAction(result(['safetensors']))).toBe('Convert');
    expect(formatLabel('gguf')).toBe('GGUF');
  });

  it('knows a repository id from a search', () => {
    expect(isRepoId('Qwen/Qwen3-0.6B')).toBe(true);
    expect(isRepoId(' org/model ')).toBe(true);
    expect(isRepoId('gemma 3')).toBe(false);
    expect(isRepoId('a/b/c')).toBe(false);
  });

  it('has no recommendations offline, without an error', async () => {
    api.recommendedModels.mockRejectedValue('the Hub is unreachable');
    modelManager.recommendations = null;
    await modelManager.loadRecommendations();
    expect(modelManager.recommendations).toEqual([]);
  });

  it('words fits and times', () => {
    expect(fitLabel('too-big')).toBe('Too big');
    expect(fitLabel(null)).toBe('Unknown');
    expect(formatEta(null)).toBe('');
    expect(formatEta(12.4)).toBe('12 s');
    expect(formatEta(600)).toBe('10 min');
    expect(formatEta(4800)).toBe('1 h 20 min');
  });
});
