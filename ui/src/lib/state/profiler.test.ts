import { describe, expect, it, vi } from 'vitest';

vi.mock('@tauri-apps/api/core', () => ({ invoke: vi.fn(), Channel: class {} }));

import type { KernelTable, ProfilerEvent, StepSample } from '../profiler-api';
import { describeVariant, formatGigabytesPerSecond, peakFraction, percentile, ProfilerState, rooflineBars } from './profiler.svelte';

const EMPTY_TABLE: KernelTable = { steps: 0, tokens: 0, gpuMsPerToken: 0, kernels: [], kinds: [], layers: [] };

function step(atMs: number, gpuMs: number): StepSample {
  return { replyId: 1, phase: 'decode', position: 40, tokens: 1, atMs, gpuMs, kinds: [{ kind: 'matmul', msPerToken: gpuMs, share: 1 }] };
}

describe('percentile', () => {
  it('takes the nearest rank', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([5, 1, 4, 2, 3], 90)).toBe(5);
    expect(percentile([5, 1, 4, 2, 3], 0)).toBe(1);
    expect(percentile([5, 1, 4, 2, 3], 100)).toBe(5);
    expect(percentile([7], 90)).toBe(7);
  });

  it('counts each value by its weight', () => {
    // 10 ms for 9 tokens, 100 ms for 1: the median token took 10 ms, the 95th 100 ms.
    expect(percentile([100, 10], 50, [1, 9])).toBe(10);
    expect(percentile([100, 10], 90, [1, 9])).toBe(10);
    expect(percentile([100, 10], 95, [1, 9])).toBe(100);
  });

  it('has nothing to say of nothing', () => {
    expect(percentile([], 50)).toBeNull();
    expect(percentile([3], 50, [0])).toBeNull();
  });
});

describe('ProfilerState', () => {
  const reply: ProfilerEvent[] = [
    { type: 'replyStarted', replyId: 1, modelId: 'smol', atMs: 0 },
    { type: 'firstToken', replyId: 1, atMs: 120, ttftMs: 118 },
    { type: 'tokens', replyId: 1, atMs: 370, count: 10, spanMs: 250 },
    { type: 'step', step: step(380, 20), summary: { decode: { ...EMPTY_TABLE, steps: 1, tokens: 1 }, prefill: EMPTY_TABLE } },
    { type: 'tokens', replyId: 1, atMs: 620, count: 5, spanMs: 250 },
    { type: 'tokens', replyId: 1, atMs: 640, count: 0, spanMs: 20 },
  ];

  it('turns token windows into decode speed and ms per token', () => {
    const state = new ProfilerState();
    reply.forEach((event) => state.apply(event));
    expect(state.throughput).toEqual([
      { atMs: 370, phase: 'decode', tokensPerSecond: 40 },
      { atMs: 620, phase: 'decode', tokensPerSecond: 20 },
    ]);
    // Ten tokens at 25 ms, five at 50 ms.
    expect(state.msPerToken).toEqual({ p50: 25, p90: 50 });
    expect(state.ttftMs).toBe(118);
    expect(state.generating).toBe(true);
    expect(state.steps).toHaveLength(1);
    expect(state.summary?.decode.steps).toBe(1);
  });

  it('adds the prefill speed and the engine’s time to first token when a reply finishes', () => {
    const state = new ProfilerState();
    [
      ...reply,
      {
        type: 'replyFinished',
        replyId: 1,
        atMs: 700,
        timing: {
          promptTokens: 30,
          prefilledTokens: 30,
          generatedTokens: 16,
          ttftMs: 110,
          prefillTokensPerSecond: 300,
          decodeTokensPerSecond: 30,
        },
      } satisfies ProfilerEvent,
    ].forEach((event) => state.apply(event));
    expect(state.throughput.at(-1)).toEqual({ atMs: 700, phase: 'prefill', tokensPerSecond: 300 });
    expect(state.ttftMs).toBe(110);
    expect(state.generating).toBe(false);
  });

  it('starts afresh when a reply runs on another model', () => {
    const state = new ProfilerState();
    reply.forEach((event) => state.apply(event));
    state.apply({ type: 'replyStarted', replyId: 2, modelId: 'gemma', atMs: 900 });
    expect(state.replies.map((r) => r.modelId)).toEqual(['gemma']);
    expect(state.throughput).toEqual([]);
    expect(state.summary).toBeNull();
    expect(state.ttftMs).toBeNull();
  });

  it('keeps the latest points only', () => {
    const state = new ProfilerState();
    state.apply({ type: 'replyStarted', replyId: 1, modelId: 'smol', atMs: 0 });
    for (let i = 0; i < 700; i++) state.apply({ type: 'tokens', replyId: 1, atMs: i, count: 1, spanMs: 10 });
    expect(state.throughput).toHaveLength(600);
    expect(state.throughput[0].atMs).toBe(100);
  });
});

describe('chart columns', () => {
  it('put decode and prefill speeds apart on one time axis', () => {
    const state = new ProfilerState();
    state.apply({ type: 'replyStarted', replyId: 1, modelId: 'smol', atMs: 0 });
    state.apply({ type: 'tokens', replyId: 1, atMs: 500, count: 5, spanMs: 250 });
    state.apply({
      type: 'replyFinished',
      replyId: 1,
      atMs: 1000,
      timing: { promptTokens: 8, prefilledTokens: 8, generatedTokens: 6, ttftMs: 50, prefillTokensPerSecond: 160, decodeTokensPerSecond: 20 },
    });
    expect(state.throughputColumns).toEqual([
      [0.5, 1],
      [20, null],
      [null, 160],
    ]);
  });

  it('give each kernel kind of the decode steps a column', () => {
    const state = new ProfilerState();
    const kinds = (matmul: number, norm?: number) => [
      { kind: 'norm' as const, msPerToken: norm ?? 0, share: 0 },
      { kind: 'matmul' as const, msPerToken: matmul, share: 0 },
    ].filter((k) => k.msPerToken > 0);
    const summary = { decode: EMPTY_TABLE, prefill: EMPTY_TABLE };
    state.apply({ type: 'step', step: { ...step(1000, 3), kinds: kinds(2, 1) }, summary });
    state.apply({ type: 'step', step: { ...step(2000, 2), phase: 'prefill', kinds: kinds(9) }, summary });
    state.apply({ type: 'step', step: { ...step(3000, 2), kinds: kinds(2) }, summary });
    expect(state.decodeKinds).toEqual(['matmul', 'norm']);
    expect(state.kindColumns).toEqual([
      [1, 3],
      [2, 2],
      [1, 0],
    ]);
  });
});

describe('the roofline', () => {
  it('puts achieved bandwidth over the peak, where both are known', () => {
    expect(peakFraction(48, 120)).toBeCloseTo(0.4);
    expect(peakFraction(150, 120)).toBeCloseTo(1.25);
    expect(peakFraction(null, 120)).toBeNull();
    expect(peakFraction(48, null)).toBeNull();
    expect(peakFraction(48, 0)).toBeNull();
  });

  it('draws the kernels that read weights, in the table’s order', () => {
    const row = (name: string, gigabytesPerSecond: number | null) => ({
      name,
      kind: 'matmul' as const,
      calls: 1,
      totalMs: 1,
      msPerToken: 1,
      share: 0.5,
      gigabytesPerSecond,
      variants: [],
    });
    const table: KernelTable = { ...EMPTY_TABLE, kernels: [row('lm head', 80), row('attention', null), row('ffn_down', 20)] };
    expect(rooflineBars(table, 160)).toEqual([
      { name: 'lm head', kind: 'matmul', gigabytesPerSecond: 80, fraction: 0.5 },
      { name: 'ffn_down', kind: 'matmul', gigabytesPerSecond: 20, fraction: 0.125 },
    ]);
    expect(rooflineBars(table, null).map((bar) => bar.fraction)).toEqual([null, null]);
    expect(rooflineBars(null, 160)).toEqual([]);
  });

  it('formats bandwidths and variants briefly', () => {
    expect([1.234, 48.21, 1234.5].map(formatGigabytesPerSecond)).toEqual(['1.23', '48.2', '1235']);
    expect(describeVariant({ shader: 'rmsnorm.wgsl', entry: 'main', defines: ['F16', 'WG=64u'], workgroup_size: [64, 1, 1] })).toEqual({
      source: 'rmsnorm.wgsl:main',
      workgroup: '64×1×1',
      defines: 'F16 · WG=64u',
    });
  });
});
