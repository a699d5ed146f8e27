// One notification as ntfy and Gotify describe it (a title, a text that may be Markdown, a priority,
// tags, a link to open, an attachment by URL) -> one readable Telegram message in HTML, within
// Telegram's 4096 characters: the title line (tag emoji, a mark for high priorities, the title in
// bold), the text, then a line each for the other tags, the link and the attachment. The sender's
// words are escaped or converted by markdown.ts; an attachment is a link, never fetched here.
// Low priorities are sent silently. Framework-free.
import { escapeFor } from './escape.ts';
import { href, link, markdownToHtml } from './markdown.ts';
import { MAX_TEXT } from './message.ts';
import { tagEmoji } from './tag-emoji.ts';

export interface Notice {
  title: string;
  message: string;
  markdown: boolean;
  /** ntfy's scale: 1 min, 2 low, 3 default, 4 high, 5 max. */
  priority: number;
  tags: string[];
  /** Opened when the notification is tapped (ntfy Click, Gotify's click.url). */
  click: string;
  /** A file by URL (ntfy Attach, Gotify's bigImageUrl): a link in the message. */
  attach: { url: string; name: string } | null;
}

const html = (s: string) => escapeFor('HTML', s);

/** `s` cut to at most `n` UTF-16 units (an ellipsis marks the cut), never inside a surrogate pair. */
export function cut(s: string, n: number): string {
  if (s.length <= n) return s;
  let k = Math.max(0, n - 1);
  const last = s.charCodeAt(k - 1);
  if (last >= 0xd800 && last <= 0xdbff) k--;
  return `${s.slice(0, k)}…`;
}

const MARK: Record<number, string> = { 4: '❗', 5: '‼️' };

/** The sendMessage parameters of `n`: text (HTML), parse_mode, and for a quiet one disable_notification. */
export function noticeMessage(n: Notice, max = MAX_TEXT): Record<string, unknown> {
  const emoji: string[] = [];
  const other: string[] = [];
  for (const t of n.tags.slice(0, 20)) {
    const e = tagEmoji(t);
    if (e) emoji.push(e);
    else if (t) other.push(cut(t, 40));
  }
  // Each part's visible text is its raw text: markup is not counted, escapes count one each.
  const lead = [...emoji, MARK[n.priority] ?? ''].join('');
  const title = cut(n.title.trim(), 250);
  const head = [lead, title ? `<b>${html(title)}</b>` : ''].filter(Boolean).join(' ');
  const headLength = [lead, title].filter(Boolean).join(' ').length;

  const tail: string[] = [];
  let tailLength = 0;
  const add = (markup: string, visible: string) => {
    tail.push(markup);
    tailLength += visible.length + 1;
  };
  const tags = cut(other.join(', '), 300);
  if (tags) add(`🏷 ${html(tags)}`, `🏷 ${tags}`);
  if (n.click) {
    const shown = cut(n.click, 80);
    add(`🔗 ${href(n.click) ? link(n.click, html(shown)) : html(shown)}`, `🔗 ${shown}`);
  }
  if (n.attach) {
    const name = cut(n.attach.name || 'attachment', 100);
    add(`📎 ${link(n.attach.url, html(name))}`, `📎 ${name}`);
  }

  // The text gets what the other parts leave (about 3,300 characters at the least).
  const room = max - headLength - tailLength - (head ? 1 : 0) - (tail.length ? 1 : 0);
  const source = cut(n.message.trim(), Math.max(0, room));
  const converted = n.markdown ? markdownToHtml(source) : html(source);
  // Markdown that shows nothing (an empty code block) is sent as written: a message is never empty.
  const body = converted.trim() === '' && !head ? html(source) : converted;
  const text = [head && body ? `${head}\n${body}` : head || body, tail.join('\n')]
    .filter(Boolean)
    .join('\n\n');
  return {
    text,
    parse_mode: 'HTML',
    // Telegram previews the first link: the attachment when there is one, else nothing.
    link_preview_options:
      n.attach && href(n.attach.url)
        ? { url: n.attach.url, prefer_large_media: true }
        : { is_disabled: true },
    ...(n.priority <= 2 ? { disable_notification: true } : {}),
  };
}
