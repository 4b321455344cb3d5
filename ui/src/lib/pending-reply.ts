import type { GenerationEvent, Message } from './api';

/** A reply on its way: what the chat shows while tokens stream in. */
export type PendingReply = {
  conversationId: number;
  /** The user message it answers. */
  parentId: number;
  generationId: number | null;
  phase: 'sending' | 'queued' | 'running';
  /** Jobs ahead of it while queued. */
  ahead: number;
  text: string;
  /** Token events received, for the live rate. */
  tokens: number;
  /** When the first token came: the rate counts decoding, not reading the prompt. */
  firstTokenAt: number | null;
};

export type ReplyOutcome =
  | { kind: 'done'; message: Message }
  | { kind: 'cancelled' }
  | { kind: 'failed'; reason: string; contextFull: boolean };

export function pendingReply(conversationId: number, parentId: number): PendingReply {
  return { conversationId, parentId, generationId: null, phase: 'sending', ahead: 0, text: '', tokens: 0, firstTokenAt: null };
}

/** The next state of a pending reply after one of its events, or how it ended. */
export function applyEvent(reply: PendingReply, event: GenerationEvent, now: number): PendingReply | ReplyOutcome {
  switch (event.type) {
    case 'queued':
      return { ...reply, phase: 'queued', ahead: event.ahead };
    case 'started':
      return { ...reply, phase: 'running', ahead: 0 };
    case 'token':
      return { ...reply, phase: 'running', text: reply.text + event.text, tokens: reply.tokens + 1, firstTokenAt: reply.firstTokenAt ?? now };
    case 'done':
      return { kind: 'done', message: event.message };
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'failed':
      return { kind: 'failed', reason: event.reason, contextFull: event.contextFull };
  }
}

export function isOutcome(value: PendingReply | ReplyOutcome): value is ReplyOutcome {
  return 'kind' in value;
}

/** Decode speed so far (tokens after the first, per second), once there is enough to measure. */
export function liveRate(reply: PendingReply, now: number): number | null {
  if (reply.firstTokenAt === null || reply.tokens < 2) return null;
  const seconds = (now - reply.firstTokenAt) / 1000;
  return seconds > 0 ? (reply.tokens - 1) / seconds : null;
}
