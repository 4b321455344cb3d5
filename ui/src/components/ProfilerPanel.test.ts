import { render, screen, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('@tauri-apps/api/core', () => ({ invoke: vi.fn(), Channel: class {} }));
// jsdom has no canvas to draw on; the charts' data is what these tests look at.
vi.mock(import('chart.js'), async (importOriginal) => ({
  ...(await importOriginal()),
  Chart: class {
    static register() {}
    data = { datasets: [] };
    update() {}
    destroy() {}
  } as never,
}));

import type { KernelTable } from '../lib/profiler-api';
import { profiler } from '../lib/state/profiler.svelte';
import ProfilerKernels from './ProfilerKernels.svelte';
import ProfilerMemory from './ProfilerMemory.svelte';

const DECODE: KernelTable = {
  steps: 2,
  tokens: 2,
  gpuMsPerToken: 2,
  kernels: [
    { name: 'output', kind: 'matmul', calls: 2, totalMs: 2, msPerToken: 1, share: 0.5, gigabytesPerSecond: 48.21 },
    { name: 'attention', kind: 'attention', calls: 60, totalMs: 0.25, msPerToken: 0.125, share: 0.0625, gigabytesPerSecond: null },
  ],
  kinds: [
    { kind: 'matmul', msPerToken: 1.875, share: 0.9375 },
    { kind: 'attention', msPerToken: 0.125, share: 0.0625 },
  ],
  layers: [{ layer: null, msPerToken: 1, share: 0.5 }],
};

describe('profiler sections', () => {
  beforeEach(() => profiler.clear());

  it('list the sampled kernels with their times', async () => {
    render(ProfilerKernels);
    expect(screen.getByText(/No decode step sampled yet/)).toBeTruthy();
    profiler.apply({
      type: 'step',
      step: { replyId: 1, phase: 'decode', position: 9, tokens: 1, atMs: 10, gpuMs: 2, kinds: DECODE.kinds },
      summary: { decode: DECODE, prefill: { ...DECODE, steps: 0, kernels: [] } },
    });
    const table = await screen.findByTestId('kernel-table');
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows.map((row) => within(row).getAllByRole('cell')[0].textContent)).toEqual(['output', 'attention']);
    const cells = (row: HTMLElement) => within(row).getAllByRole('cell').map((cell) => cell.textContent?.trim());
    expect(cells(rows[0])).toEqual(['output', 'matmul', '2', '2.000', '1.000', '50.0%', '48.2']);
    // Attention reads no weights: its bandwidth cell stays empty.
    expect(cells(rows[1])).toEqual(['attention', 'attention', '60', '0.250', '0.125', '6.3%', '']);
    expect(screen.getByTestId('kind-chart').dataset.points).toBe('1');
  });

  it('show what the loaded model takes of the budget', async () => {
    render(ProfilerMemory);
    expect(screen.getByText('The GPU opens when a model loads.')).toBeTruthy();
    profiler.memory = {
      gpu: {
        adapter_kind: 'cpu-emulated',
        memory_kind: 'unified',
        tier: 'cpu',
        device_total: null,
        device_available: null,
        host_total: 16e9,
        host_available: 8e9,
        source: 'host-ram',
        budget: 12e9,
      },
      tierLabel: 'CPU-emulated GPU in host RAM',
      models: [{ modelId: 'smollm2-135m-instruct', contextLen: 8192, footprint: { weights: 100e6, kv_cache: 50e6, scratch: 5e6 } }],
    };
    expect((await screen.findByTestId('memory-tier')).textContent).toBe('cpu');
    expect(screen.getByTestId('memory-model').textContent?.replace(/\s+/g, ' ')).toMatch(/SmolLM2 135M Instruct: 155\.0 MB at 8,192 tokens/);
    expect(screen.getByText(/of 12\.0 GB budget/)).toBeTruthy();
  });
});
