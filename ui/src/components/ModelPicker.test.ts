import { fireEvent, render, screen } from '@testing-library/svelte';
import { invoke } from '@tauri-apps/api/core';
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('@tauri-apps/api/core', () => ({ invoke: vi.fn(), Channel: class {} }));
// The settings the model state reads follow the system theme; jsdom has no media queries.
vi.hoisted(() => {
  window.matchMedia = (() => ({ matches: false, addEventListener() {}, removeEventListener() {} })) as never;
});

import type { ModelList } from '../lib/api';
import { models } from '../lib/state/models.svelte';
import ModelPicker from './ModelPicker.svelte';

const LOADING: ModelList = {
  installed: [
    {
      id: 'llama-8b',
      architecture: 'llama',
      quantization: 'Q4_K_M',
      fileSize: 4_900_000_000,
      isDefault: false,
      state: { state: 'loading', fraction: 0.4, stage: 'uploading weights' },
    },
  ],
  availableDefaults: [],
};

describe('model picker', () => {
  beforeEach(() => {
    vi.mocked(invoke).mockReset();
    vi.mocked(invoke).mockImplementation(async (command) => {
      if (command === 'list_models') return models.list;
      if (command === 'list_remote_models') return [];
      return undefined;
    });
    models.list = LOADING;
    models.activeId = 'llama-8b';
  });

  it('offers to cancel a load in progress, through unload', async () => {
    render(ModelPicker);
    await fireEvent.click(screen.getByTestId('model-picker-button'));
    expect(screen.getByTestId('load-progress').textContent).toContain('uploading weights · 40%');
    expect(screen.queryByTestId('load-model')).toBeNull();

    await fireEvent.click(screen.getByTestId('cancel-load'));
    expect(invoke).toHaveBeenCalledWith('unload_model', { modelId: 'llama-8b' });
  });
});
