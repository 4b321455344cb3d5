import type { ConversationSummary, FinishReason } from './api';

/** Bytes in decimal units, as the model store reports sizes: `98.4 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export function formatRate(tokensPerSecond: number): string {
  return `${tokensPerSecond >= 100 ? tokensPerSecond.toFixed(0) : tokensPerSecond.toFixed(1)} tok/s`;
}

export function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** What the stats line says about how a reply ended; empty for a normal end. */
export function finishLabel(reason: FinishReason): string {
  switch (reason) {
    case 'eos':
      return '';
    case 'max_tokens':
      return 'Reached the token limit';
    case 'stop_string':
      return 'Stop sequence';
    case 'cancelled':
      return 'Stopped';
    case 'context_full':
      return 'Context full';
    case 'failed':
      return 'Generation failed';
    case 'interrupted':
      return 'Interrupted';
  }
}

const KNOWN_MODELS: Record<string, string> = {
  'smollm2-135m-instruct': 'SmolLM2 135M Instruct',
  'gemma-3-270m': 'Gemma 3 270M',
};

/** A model's name for people: the defaults have proper names, others show their store id. */
export function modelLabel(id: string): string {
  // A remote model (`backendId/model`) goes by its server's name for it.
  const slash = id.indexOf('/');
  if (slash >= 0) return id.slice(slash + 1);
  return KNOWN_MODELS[id] ?? id;
}

export type ConversationGroup = { label: string; items: ConversationSummary[] };

const DAY = 24 * 60 * 60 * 1000;

/** Conversations under "Today", "Yesterday", "Previous 7 days", "Previous 30 days", "Older". */
export function groupByRecency(conversations: ConversationSummary[], now: Date): ConversationGroup[] {
  const startOfToday = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const bounds: [string, number][] = [
    ['Today', startOfToday],
    ['Yesterday', startOfToday - DAY],
    ['Previous 7 days', startOfToday - 7 * DAY],
    ['Previous 30 days', startOfToday - 30 * DAY],
    ['Older', -Infinity],
  ];
  const groups: ConversationGroup[] = [];
  for (const conversation of conversations) {
    const label = bounds.find(([, since]) => conversation.updatedAt >= since)![0];
    const group = groups.find((g) => g.label === label);
    if (group) group.items.push(conversation);
    else groups.push({ label, items: [conversation] });
  }
  const order = bounds.map(([label]) => label);
  return groups.sort((a, b) => order.indexOf(a.label) - order.indexOf(b.label));
}
