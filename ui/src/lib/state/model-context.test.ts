import { beforeEach, describe, expect, it, vi } from 'vitest';

import type { ContextSetting, InstalledModel } from '../api';

const api = vi.hoisted(() => ({ modelContext: vi.fn(), setModelContext: vi.fn() }));
const models = vi.hoisted(() => ({ installed: [] as InstalledModel[], reload: vi.fn() }));
const toasts = vi.hoisted(() => ({ show: vi.fn() }));

vi.mock('../api', async (importOriginal) => ({ ...(await importOriginal<typeof import('../api')>()), api }));
vi.mock('./models.svelte', () => ({ models }));
vi.mock('./toasts.svelte', () => ({ toasts }));

const { contextFit, modelContext } = await import('./model-context.svelte');

function setting(overrides: Partial<ContextSetting> = {}): ContextSetting {
  return {
    modelId: 'tiny',
    contextLen: 4096,
    chosen: 4096,
    defaultLen: 8192,
    minLen: 256,
    maxLen: 131072,
    footprint: { weights: 600, kv_cache: 300, scratch: 100 },
    budget: 2000,
    ...overrides,
  };
}

function loadedWith(contextLen: number): InstalledModel {
  const info = { name: 'tiny', architecture: 'llama', quantization: 'Q8_0', file_size: 1, weight_bytes: 1, context_len: contextLen, n_layers: 1, vocab_size: 1 };
  return { id: 'tiny', architecture: 'llama', quantization: 'Q8_0', fileSize: 1, isDefault: false, state: { state: 'loaded', info } };
}

beforeEach(() => {
  vi.clearAllMocks();
  models.installed = [];
});

describe('contextFit', () => {
  it('adds the weights, the KV cache and the scratch and compares them with the budget', () => {
    expect(contextFit(setting())).toEqual({ total: 1000, fits: true });
    expect(contextFit(setting({ budget: 999 }))).toEqual({ total: 1000, fits: false });
    expect(contextFit(setting({ budget: null }))).toEqual({ total: 1000, fits: null });
  });
});

describe('choosing a context', () => {
  it('reloads a loaded model that holds another context', async () => {
    models.installed = [loadedWith(8192)];
    api.setModelContext.mockResolvedValue(setting());
    await modelContext.choose('tiny', 4096);
    expect(api.setModelContext).toHaveBeenCalledWith('tiny', 4096);
    expect(models.reload).toHaveBeenCalledWith('tiny');
    expect(modelContext.setting?.contextLen).toBe(4096);
  });

  it('leaves a model alone that is not loaded or already holds it', async () => {
    api.setModelContext.mockResolvedValue(setting());
    await modelContext.choose('tiny', 4096);
    models.installed = [loadedWith(4096)];
    await modelContext.choose('tiny', 4096);
    expect(models.reload).not.toHaveBeenCalled();
  });

  it('shows why a choice could not be saved', async () => {
    api.setModelContext.mockRejectedValue('the model store is unavailable');
    await modelContext.choose('tiny', 4096);
    expect(toasts.show).toHaveBeenCalledWith('error', "Could not change tiny's context", 'the model store is unavailable');
    expect(modelContext.busy).toBe(false);
  });
});
