import { describe, expect, it } from 'vitest';

import { isSafeLink, renderMarkdown } from './markdown';

function dom(markdown: string): HTMLElement {
  const container = document.createElement('div');
  container.innerHTML = renderMarkdown(markdown);
  return container;
}

describe('renderMarkdown', () => {
  it('shows raw HTML from the model as text', () => {
    const el = dom('Look: <img src=x onerror="window.pwned=1"> and <script>window.pwned=2</script>');
    expect(el.querySelector('img')).toBeNull();
    expect(el.querySelector('script')).toBeNull();
    expect(el.textContent).toContain('<img src=x onerror="window.pwned=1">');
    expect(el.textContent).toContain('<script>window.pwned=2</script>');
    expect(el.querySelector('[onerror]')).toBeNull();
  });

  it('shows a block of raw HTML as text', () => {
    const el = dom('<div onclick="x()">\n<iframe src="https://evil.example"></iframe>\n</div>');
    expect(el.querySelector('iframe, [onclick]')).toBeNull();
    expect(el.textContent).toContain('<iframe src="https://evil.example"></iframe>');
  });

  it('keeps the text of links it refuses and drops their target', () => {
    for (const href of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,<b>x</b>', 'vbscript:x', 'file:///etc/passwd', 'relative/page.html']) {
      const el = dom(`[click me](${href})`);
      expect(el.textContent).toContain('click me');
      for (const a of el.querySelectorAll('a')) expect(a.getAttribute('href')).toBeNull();
    }
  });

  it('refuses autolinks with script schemes', () => {
    const el = dom('<javascript:alert(1)>');
    expect(el.querySelector('a[href]')).toBeNull();
  });

  it('links to web and mail addresses', () => {
    const el = dom('[site](https://example.com/a?b=1 "Example") and <mailto:me@example.com>');
    const links = [...el.querySelectorAll('a')];
    expect(links.map((a) => a.getAttribute('href'))).toEqual(['https://example.com/a?b=1', 'mailto:me@example.com']);
    expect(links[0].getAttribute('title')).toBe('Example');
  });

  it('cannot break out of a link title', () => {
    const el = dom('[a](https://example.com "t\\" onmouseover=\\"alert(1)")');
    expect(el.querySelector('[onmouseover]')).toBeNull();
  });

  it('shows images as their description, never loading them', () => {
    const el = dom('![a cat](https://example.com/cat.png)');
    expect(el.querySelector('img')).toBeNull();
    expect(el.querySelector('.image-placeholder')?.textContent).toBe('a cat');
  });

  it('highlights fenced code with its language', () => {
    const el = dom('```rust\nfn main() { let x = 1; }\n```');
    expect(el.querySelector('.code-language')?.textContent).toBe('rust');
    expect(el.querySelector('code.language-rust .hljs-keyword')?.textContent).toBe('fn');
  });

  it('escapes code in unknown languages', () => {
    const el = dom('```weird"><script>x</script>\n<b>bold</b>\n```');
    expect(el.querySelector('script, b')).toBeNull();
    expect(el.querySelector('code')?.textContent).toBe('<b>bold</b>');
  });

  it('renders the usual Markdown', () => {
    const el = dom('# Title\n\n- **bold** and *it*\n- `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done');
    expect(el.querySelector('h1')?.textContent).toBe('Title');
    expect(el.querySelector('strong')?.textContent).toBe('bold');
    expect(el.querySelector('td')?.textContent).toBe('1');
    const checkbox = el.querySelector('input');
    expect(checkbox?.getAttribute('type')).toBe('checkbox');
    expect(checkbox?.hasAttribute('disabled')).toBe(true);
  });
});

describe('isSafeLink', () => {
  it('accepts only http, https and mailto', () => {
    expect(isSafeLink('https://a.b')).toBe(true);
    expect(isSafeLink(' HTTP://a.b')).toBe(true);
    expect(isSafeLink('mailto:x@y.z')).toBe(true);
    expect(isSafeLink('javascript:alert(1)')).toBe(false);
    expect(isSafeLink('tauri://localhost')).toBe(false);
    expect(isSafeLink(null)).toBe(false);
  });
});
