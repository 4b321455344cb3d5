import { describe, expect, it } from 'vitest';

import type { ConversationSummary } from './api';
import { finishLabel, formatBytes, formatDuration, formatRate, groupByRecency, modelLabel } from './format';

describe('formatting', () => {
  it('writes sizes in decimal units', () => {
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(98_362_432)).toBe('98.4 MB');
    expect(formatBytes(5_000_000_000)).toBe('5.0 GB');
  });

  it('writes rates and durations', () => {
    expect(formatRate(23.456)).toBe('23.5 tok/s');
    expect(formatRate(123.4)).toBe('123 tok/s');
    expect(formatDuration(412.4)).toBe('412 ms');
    expect(formatDuration(1530)).toBe('1.53 s');
  });

  it('names how replies ended', () => {
    expect(finishLabel('eos')).toBe('');
    expect(finishLabel('cancelled')).toBe('Stopped');
    expect(finishLabel('context_full')).toBe('Context full');
    expect(finishLabel('interrupted')).toBe('Interrupted');
    expect(finishLabel('failed')).toBe('Generation failed');
  });

  it('names the default models', () => {
    expect(modelLabel('smollm2-135m-instruct')).toBe('SmolLM2 135M Instruct');
    expect(modelLabel('my-model')).toBe('my-model');
    expect(modelLabel('remote-1/meta-llama/Llama-3.1-8B')).toBe('meta-llama/Llama-3.1-8B');
  });
});

describe('groupByRecency', () => {
  const now = new Date(2026, 10, 21, 15, 0);
  const at = (days: number, hour = 12) => new Date(2026, 10, 21 - days, hour).getTime();
  const summary = (id: number, updatedAt: number): ConversationSummary => ({ id, title: `c${id}`, updatedAt, snippet: null });

  it('puts conversations under their age, most recent group first', () => {
    const groups = groupByRecency([summary(1, at(0, 1)), summary(2, at(1)), summary(3, at(3)), summary(4, at(20)), summary(5, at(400))], now);
    expect(groups.map((g) => [g.label, g.items.map((c) => c.id)])).toEqual([
      ['Today', [1]],
      ['Yesterday', [2]],
      ['Previous 7 days', [3]],
      ['Previous 30 days', [4]],
      ['Older', [5]],
    ]);
  });

  it('leaves out empty groups', () => {
    expect(groupByRecency([summary(1, at(2))], now).map((g) => g.label)).toEqual(['Previous 7 days']);
  });
});
