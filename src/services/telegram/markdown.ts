// Markdown as ntfy and Gotify senders write it -> Telegram HTML (docs/telegram.md, ntfy and Gotify):
// headings, emphasis, strike, code spans and blocks, links, lists, quotes. Every tag in the output
// is one this file writes, balanced, in a nesting Telegram accepts (no entity inside code, no code
// inside emphasis or a link); everything the sender wrote is escaped text, so no input can break
// the message or add an entity of its own. What does not parse as Markdown stays as written.
// The visible text is never longer than the source (markers are dropped, never added), so a source
// cut to Telegram's 4096 characters stays within them. Framework-free.
import { escapeFor } from './escape.ts';

const html = (s: string) => escapeFor('HTML', s);

/** An http(s) URL as an href attribute, or null (other schemes and odd URLs are shown as text). */
export function href(url: string): string | null {
  if (url.length > 2048 || !/^https?:\/\/[^\s<>"]+$/i.test(url)) return null;
  try {
    new URL(url);
  } catch {
    return null;
  }
  return html(url).replace(/"/g, '&quot;');
}

export function link(url: string, text: string): string {
  const h = href(url);
  return h ? `<a href="${h}">${text}</a>` : text;
}

type Mark = 'b' | 'i' | 's' | 'a';

// Emphasis markers, longest first; `_` must not stand inside a word (snake_case stays as written).
const EMPHASIS: [string, Mark][] = [
  ['**', 'b'],
  ['__', 'b'],
  ['~~', 's'],
  ['*', 'i'],
  ['_', 'i'],
];
const PUNCT = /[!-/:-@[-`{-~]/;
const WORD = /[\p{L}\p{N}]/u;
const isSpace = (c: string | undefined) => c === undefined || /\s/.test(c);

/** The index of the closer of `m` opened at `from`, or -1. */
function closer(s: string, m: string, from: number): number {
  let j = s.indexOf(m, from);
  while (j !== -1) {
    const before = s[j - 1];
    const after = s[j + m.length];
    const single = m.length === 1;
    const ok =
      !isSpace(before) &&
      (!single || (after !== m && before !== m)) &&
      (m[0] !== '_' || !WORD.test(after ?? ''));
    if (ok && j > from) return j;
    j = s.indexOf(m, j + 1);
  }
  return -1;
}

/**
 * One line's inline Markdown as HTML. `open` holds the marks around this text: a mark is not opened
 * again inside itself, and code inside emphasis or a link is shown without its own entity.
 */
export function inline(s: string, open: ReadonlySet<Mark> = new Set()): string {
  let out = '';
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length && PUNCT.test(s[i + 1]!)) {
      out += html(s[i + 1]!);
      i += 2;
      continue;
    }
    if (c === '`') {
      let n = 1;
      while (s[i + n] === '`') n++;
      const fence = '`'.repeat(n);
      let j = s.indexOf(fence, i + n);
      while (j !== -1 && s[j + n] === '`') j = s.indexOf(fence, j + n + 1);
      if (j !== -1) {
        const code = html(s.slice(i + n, j));
        out += open.size ? code : `<code>${code}</code>`;
        i = j + n;
        continue;
      }
      out += fence;
      i += n;
      continue;
    }
    if ((c === '[' || (c === '!' && s[i + 1] === '[')) && !open.has('a')) {
      const start = c === '!' ? i + 1 : i;
      const m = /^\[([^\]\n]{0,500})\]\(\s*<?([^\s()<>]{1,2048})>?(?:\s+"[^"\n]{0,200}")?\s*\)/.exec(
        s.slice(start, start + 2800),
      );
      if (m && href(m[2]!)) {
        const text = m[1] || (c === '!' ? 'image' : m[2]!);
        out += link(m[2]!, inline(text, new Set([...open, 'a'])));
        i = start + m[0].length;
        continue;
      }
    }
    if (c === '<' && !open.has('a')) {
      const m = /^<(https?:\/\/[^\s<>]{1,2048})>/i.exec(s.slice(i, i + 2060));
      if (m && href(m[1]!)) {
        out += link(m[1]!, html(m[1]!));
        i += m[0].length;
        continue;
      }
    }
    const em = EMPHASIS.find(([m]) => s.startsWith(m, i));
    if (em) {
      const [m, tag] = em;
      const next = s[i + m.length];
      const opens =
        !open.has(tag) &&
        !isSpace(next) &&
        (m.length > 1 || next !== m) &&
        (m[0] !== '_' || !WORD.test(s[i - 1] ?? ''));
      const j = opens ? closer(s, m, i + m.length) : -1;
      if (j !== -1) {
        out += `<${tag}>${inline(s.slice(i + m.length, j), new Set([...open, tag]))}</${tag}>`;
        i = j + m.length;
        continue;
      }
      out += html(m);
      i += m.length;
      continue;
    }
    out += html(c);
    i++;
  }
  return out;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+#-]{0,32})[^`]*$/;
const HEADING = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9}[.)])\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;

/** A Markdown text as Telegram HTML (see the file's header). */
export function markdownToHtml(src: string): string {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const body: string[] = [];
      let j = i + 1;
      while (j < lines.length && !lines[j]!.trim().startsWith(marker)) body.push(lines[j++]!);
      // An unclosed fence runs to the end, as in CommonMark.
      const code = html(body.join('\n'));
      const lang = fence[2];
      out.push(
        code === ''
          ? ''
          : lang
            ? `<pre><code class="language-${html(lang)}">${code}</code></pre>`
            : `<pre>${code}</pre>`,
      );
      i = j;
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i]!)) quoted.push(inline(QUOTE.exec(lines[i++]!)![1]!));
      i--;
      const text = quoted.join('\n');
      out.push(text.trim() === '' ? text : `<blockquote>${text}</blockquote>`);
      continue;
    }
    const h = HEADING.exec(line);
    if (h) {
      const text = inline(h[1]!, new Set(['b']));
      out.push(text === '' ? '' : `<b>${text}</b>`);
      continue;
    }
    if (RULE.test(line)) {
      out.push('———');
      continue;
    }
    const b = BULLET.exec(line);
    if (b) {
      out.push(`${b[1]}• ${inline(b[2]!)}`);
      continue;
    }
    const o = ORDERED.exec(line);
    if (o) {
      out.push(`${o[1]}${o[2]} ${inline(o[3]!)}`);
      continue;
    }
    out.push(inline(line));
  }
  return out.join('\n');
}
