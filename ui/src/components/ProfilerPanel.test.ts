import { fireEvent, render, screen, within } from '@testing-library/svelte';
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

import type { AdapterFacts, KernelTable, KernelVariant } from '../lib/profiler-api';
import { profiler } from '../lib/state/profiler.svelte';
import ProfilerAdapter from './ProfilerAdapter.svelte';
import ProfilerKernels from './ProfilerKernels.svelte';
import ProfilerMemory from './ProfilerMemory.svelte';

const Q4_K: KernelVariant = { shader: 'matmul_vector.wgsl', entry: 'main', defines: ['TYPE_Q4_K', 'WG=64u'], workgroup_size: [64, 1, 1] };
const Q6_K: KernelVariant = { ...Q4_K, defines: ['TYPE_Q6_K', 'WG=64u'] };
const ATTENTION: KernelVariant = { shader: 'attention.wgsl', entry: 'decode', defines: [], workgroup_size: [128, 1, 1] };

const ADAPTER: AdapterFacts = {
  name: 'llvmpipe (LLVM 19.1.7, 256 bits)',
  backend: 'Vulkan',
  deviceType: 'Cpu',
  driver: 'llvmpipe',
  driverInfo: 'Mesa 25.0.7',
  shaderF16: true,
  subgroups: true,
  subgroupSizes: [8, 8],
  cooperativeMatrix: false,
  timestamps: true,
  peakGigabytesPerSecond: 100,
  limits: [],
};

const DECODE: KernelTable = {
  steps: 2,
  tokens: 2,
  gpuMsPerToken: 2,
  kernels: [
    { name: 'output', kind: 'matmul', calls: 2, totalMs: 2, msPerToken: 1, share: 0.5, gigabytesPerSecond: 48.21, variants: [Q4_K, Q6_K] },
    { name: 'attention', kind: 'attention', calls: 60, totalMs: 0.25, msPerToken: 0.125, share: 0.0625, gigabytesPerSecond: null, variants: [ATTENTION] },
  ],
  kinds: [
    { kind: 'matmul', msPerToken: 1.875, share: 0.9375 },
    { kind: 'attention', msPerToken: 0.125, share: 0.0625 },
  ],
  layers: [{ layer: null, msPerToken: 1, share: 0.5 }],
};

describe('profiler sections', () => {
  beforeEach(() => {
    profiler.clear();
    profiler.adapter = null;
  });

  function showDecode() {
    profiler.apply({
      type: 'step',
      step: { replyId: 1, phase: 'decode', position: 9, tokens: 1, atMs: 10, gpuMs: 2, kinds: DECODE.kinds },
      summary: { decode: DECODE, prefill: { ...DECODE, steps: 0, kernels: [] } },
    });
  }

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

  it('unfold a kernel into the variants its dispatches ran', async () => {
    render(ProfilerKernels);
    showDecode();
    const table = await screen.findByTestId('kernel-table');
    expect(screen.queryByTestId('kernel-variant')).toBeNull();
    const output = within(table).getByRole('button', { name: 'output' });
    expect(output.getAttribute('aria-expanded')).toBe('false');
    await fireEvent.click(output);
    const variants = within(screen.getByTestId('kernel-variant'))
      .getAllByText(/wgsl/)
      .map((code) => code.parentElement?.textContent?.replace(/\s+/g, ' ').trim());
    expect(variants).toEqual([
      'matmul_vector.wgsl:main 64×1×1 threads TYPE_Q4_K · WG=64u',
      'matmul_vector.wgsl:main 64×1×1 threads TYPE_Q6_K · WG=64u',
    ]);
    expect(output.getAttribute('aria-expanded')).toBe('true');
    await fireEvent.click(within(table).getByRole('button', { name: 'attention' }));
    expect(screen.getAllByTestId('kernel-variant')[1].textContent).toMatch(/attention\.wgsl:decode\s+128×1×1 threads\s+no defines/);
    await fireEvent.click(output);
    expect(screen.getAllByTestId('kernel-variant')).toHaveLength(1);
  });

  it('draw the kernels that read weights against the adapter’s peak bandwidth', async () => {
    render(ProfilerKernels);
    showDecode();
    const chart = await screen.findByTestId('roofline-chart');
    expect(chart.dataset.bars).toBe('1');
    expect(screen.getByTestId('roofline-note').textContent).toMatch(/could not be measured/);

    profiler.adapter = ADAPTER;
    await vi.waitFor(() => expect(screen.getByTestId('roofline-chart').dataset.peak).toBe('100'));
    expect(screen.getByTestId('roofline-note').textContent).toMatch(/Peak 100 GB\/s, timed on a kernel that only streams memory; the best kernel reaches 48% of it/);
    expect(screen.getAllByTestId('kernel-gbps')[0].title).toBe("48% of the adapter's peak");
  });

  it('show the adapter’s measured peak bandwidth', async () => {
    render(ProfilerAdapter);
    profiler.adapter = ADAPTER;
    expect((await screen.findByTestId('adapter-peak-bandwidth')).textContent?.trim()).toBe('100 GB/s (a timed kernel reading a large buffer)');
    profiler.adapter = { ...ADAPTER, peakGigabytesPerSecond: null };
    await vi.waitFor(() => expect(screen.getByTestId('adapter-peak-bandwidth').textContent?.trim()).toBe('not measured'));
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
