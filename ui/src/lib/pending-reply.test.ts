import { describe, expect, it } from 'vitest';

import type { Message } from './api';
import { applyEvent, isOutcome, liveRate, pendingReply, type PendingReply } from './pending-reply';

function step(reply: PendingReply, ...events: Parameters<typeof applyEvent>[1][]): PendingReply {
  let now = 1000;
  for (const event of events) {
    const next = applyEvent(reply, event, (now += 100));
    if (isOutcome(next)) throw new Error('ended early');
    reply = next;
  }
  return reply;
}

describe('a pending reply', () => {
  it('waits in the queue, then streams tokens', () => {
    const queued = step(pendingReply(1, 2), { type: 'queued', ahead: 2 });
    expect([queued.phase, queued.ahead]).toEqual(['queued', 2]);
    const streaming = step(queued, { type: 'started' }, { type: 'token', text: 'Hel' }, { type: 'token', text: 'lo' });
    expect([streaming.phase, streaming.ahead, streaming.text, streaming.tokens]).toEqual(['running', 0, 'Hello', 2]);
  });

  it('ends with the saved message, a cancellation or a failure', () => {
    const reply = pendingReply(1, 2);
    const message = { id: 3, role: 'assistant', content: 'Hi' } as Message;
    expect(applyEvent(reply, { type: 'done', message }, 0)).toEqual({ kind: 'done', message });
    expect(applyEvent(reply, { type: 'cancelled' }, 0)).toEqual({ kind: 'cancelled' });
    expect(applyEvent(reply, { type: 'failed', reason: 'full', contextFull: true }, 0)).toEqual({ kind: 'failed', reason: 'full', contextFull: true });
  });

  it('measures its decode rate from the first token', () => {
    const reply = step(pendingReply(1, 2), { type: 'started' }, { type: 'token', text: 'a' }, { type: 'token', text: 'b' }, { type: 'token', text: 'c' });
    expect(liveRate(pendingReply(1, 2), 5000)).toBeNull();
    // The first token came 100 ms after "started"; two more in the 500 ms after it.
    expect(reply.firstTokenAt).toBe(1200);
    expect(liveRate(reply, 1700)).toBeCloseTo(4);
  });
});
