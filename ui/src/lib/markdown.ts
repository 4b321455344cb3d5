// Model output is untrusted: it is rendered as Markdown with raw HTML shown as text, links
// limited to http(s)/mailto, no images, and the result sanitized by DOMPurify with an
// allow-list before it reaches the DOM.
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked, type Tokens } from 'marked';

const languages = { bash, c, cpp, css, diff, go, java, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
hljs.registerAliases(['sh', 'shell', 'zsh'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['rs'], { languageName: 'rust' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['md'], { languageName: 'markdown' });

/** Link targets a click may open (in the system browser, never in the app's webview). */
export const SAFE_LINK = /^(?:https?:|mailto:)/i;

export function isSafeLink(href: string | null | undefined): href is string {
  return typeof href === 'string' && SAFE_LINK.test(href.trim());
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

function codeLanguage(lang: string | undefined): string {
  return (lang ?? '').trim().split(/\s+/)[0].toLowerCase().replace(/[^a-z0-9+#-]/g, '');
}

function highlight(code: string, language: string): string {
  if (language && hljs.getLanguage(language)) {
    return hljs.highlight(code, { language, ignoreIllegals: true }).value;
  }
  return escapeHtml(code);
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    // Raw HTML in the model's text is shown, not interpreted.
    html({ text }: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(text);
    },
    link({ href, title, tokens }: Tokens.Link) {
      const text = this.parser.parseInline(tokens);
      if (!isSafeLink(href)) return text;
      const titleAttr = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(href.trim())}"${titleAttr}>${text}</a>`;
    },
    // Images would load from the network: show their description instead.
    image({ text }: Tokens.Image) {
      return `<span class="image-placeholder">${escapeHtml(text || 'image')}</span>`;
    },
    code({ text, lang }: Tokens.Code) {
      const language = codeLanguage(lang);
      const label = language ? `<span class="code-language">${escapeHtml(language)}</span>` : '<span class="code-language">text</span>';
      const cls = language ? ` class="hljs language-${language}"` : ' class="hljs"';
      return `<div class="code-block"><div class="code-header">${label}</div><pre><code${cls}>${highlight(text, language)}</code></pre></div>`;
    },
  },
});

const ALLOWED_TAGS = [
  'a', 'b', 'blockquote', 'br', 'code', 'del', 'div', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'li',
  'ol', 'p', 'pre', 'span', 'strong', 'sub', 'sup', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul', 'input',
];

const purifier = DOMPurify();
purifier.addHook('uponSanitizeAttribute', (node, data) => {
  // Task-list checkboxes are the only inputs, and only as disabled checkboxes.
  if (node.nodeName === 'INPUT' && data.attrName === 'type') data.keepAttr = data.attrValue === 'checkbox';
});
purifier.addHook('afterSanitizeAttributes', (node) => {
  if (node.nodeName === 'INPUT') node.setAttribute('disabled', '');
  if (node.nodeName === 'A' && !isSafeLink(node.getAttribute('href'))) node.removeAttribute('href');
});

/** Markdown from the model to HTML that is safe to insert. */
export function renderMarkdown(source: string): string {
  const html = marked.parse(source, { async: false });
  return purifier.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR: ['href', 'title', 'class', 'type', 'checked', 'disabled', 'start', 'align'],
    // Only links carry URLs; the other attributes are plain values.
    ALLOWED_URI_REGEXP: SAFE_LINK,
    ADD_URI_SAFE_ATTR: ['type', 'checked', 'disabled', 'start', 'align'],
    ALLOW_DATA_ATTR: false,
  });
}
