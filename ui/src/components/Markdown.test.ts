import { clearMocks, mockIPC } from '@tauri-apps/api/mocks';
import { fireEvent, render } from '@testing-library/svelte';
import { afterEach, describe, expect, it } from 'vitest';

import Markdown from './Markdown.svelte';

describe('links in a reply', () => {
  afterEach(() => clearMocks());

  function recordCalls() {
    const calls: [string, unknown][] = [];
    mockIPC((command, args) => {
      calls.push([command, args]);
    });
    return calls;
  }

  it('open in the system browser on a click, never in the app', async () => {
    const calls = recordCalls();
    const { container } = render(Markdown, { text: 'See [the docs](https://example.com/docs).' });
    const link = container.querySelector('a')!;
    const click = new MouseEvent('click', { bubbles: true, cancelable: true });
    link.dispatchEvent(click);
    expect(click.defaultPrevented).toBe(true);
    await Promise.resolve();
    expect(calls).toEqual([['open_link', { url: 'https://example.com/docs' }]]);
  });

  it('do nothing when their target was refused', async () => {
    const calls = recordCalls();
    const { container } = render(Markdown, { text: '[x](javascript:alert(1)) <a href="https://evil.example">raw</a>' });
    expect(container.querySelector('a')).toBeNull();
    await fireEvent.click(container.querySelector('.markdown')!);
    expect(calls).toEqual([]);
  });

  it('give code blocks a copy button', () => {
    const { container } = render(Markdown, { text: '```js\nlet a = 1;\n```' });
    expect(container.querySelector('.code-header button.copy-code')?.textContent).toBe('Copy');
  });
});
