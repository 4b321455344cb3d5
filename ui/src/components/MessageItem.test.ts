import { render, screen } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';

import type { ThreadMessage } from '../lib/api';
import MessageItem from './MessageItem.svelte';

function assistant(content: string, overrides: Partial<ThreadMessage> = {}): ThreadMessage {
  return {
    id: 7,
    conversationId: 1,
    parentId: 6,
    role: 'assistant',
    content,
    createdAt: 0,
    generation: {
      modelId: 'smollm2-135m-instruct',
      finishReason: 'cancelled',
      promptTokens: 31,
      generatedTokens: 12,
      tokensPerSecond: 41.23,
      timeToFirstTokenMs: 250,
    },
    siblingIds: [5, 7],
    ...overrides,
  };
}

const handlers = { busy: false, onRegenerate: vi.fn(), onEdit: vi.fn(), onSelectBranch: vi.fn() };

describe('MessageItem', () => {
  it('renders injected markup from the model inert', () => {
    const hostile = 'Hi <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script> [click](javascript:window.pwned=3)';
    const { container } = render(MessageItem, { message: assistant(hostile), ...handlers });
    expect(container.querySelector('img, script, [onerror]')).toBeNull();
    expect(container.querySelector('a[href]')).toBeNull();
    expect(screen.getByTestId('message-content').textContent).toContain('<img src=x onerror="window.pwned=1">');
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
  });

  it('shows token counts, speed and a stopped reply', () => {
    render(MessageItem, { message: assistant('partial'), ...handlers });
    const stats = screen.getByTestId('message-stats').textContent!;
    expect(stats).toContain('Stopped');
    expect(stats).toContain('12 tokens');
    expect(stats).toContain('31 in prompt');
    expect(stats).toContain('41.2 tok/s');
  });

  it('switches between versions of a reply', async () => {
    const onSelectBranch = vi.fn();
    render(MessageItem, { message: assistant('second'), ...handlers, onSelectBranch });
    expect(screen.getByTestId('branch-switcher').textContent).toContain('2 / 2');
    screen.getByTitle('Previous version').click();
    expect(onSelectBranch).toHaveBeenCalledWith(5);
  });

  it('regenerates from the user message it answers', () => {
    const onRegenerate = vi.fn();
    render(MessageItem, { message: assistant('reply'), ...handlers, onRegenerate });
    screen.getByTestId('regenerate').click();
    expect(onRegenerate).toHaveBeenCalledWith(6);
  });

  it('shows user messages as plain text', () => {
    render(MessageItem, { message: assistant('<b>bold</b> **not markdown**', { role: 'user', generation: null, parentId: null }), ...handlers });
    const content = screen.getByTestId('message-content');
    expect(content.querySelector('b, strong')).toBeNull();
    expect(content.textContent).toBe('<b>bold</b> **not markdown**');
  });
});
