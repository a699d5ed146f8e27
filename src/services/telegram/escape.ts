// Plain text -> safe markup for each parse mode (docs/protocols/telegram-bot-api.md §3), so callers can
// send arbitrary text without learning MarkdownV2's 18 reserved characters.

export const PARSE_MODES = ['MarkdownV2', 'HTML', 'Markdown', 'none'] as const;
export type ParseMode = (typeof PARSE_MODES)[number];

// MarkdownV2: `_*[]()~\`>#+-=|{}.!` and the backslash itself, anywhere outside entities.
const MDV2 = /[_*[\]()~`>#+\-=|{}.!\\]/g;
// Legacy Markdown: only `_ * \` [` are special outside entities.
const MD = /[_*`[]/g;
const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/** Escapes `text` so Telegram shows it verbatim under `mode`. */
export function escapeFor(mode: ParseMode, text: string): string {
  switch (mode) {
    case 'MarkdownV2':
      return text.replace(MDV2, '\\$&');
    case 'Markdown':
      return text.replace(MD, '\\$&');
    case 'HTML':
      return text.replace(/[&<>]/g, (c) => HTML[c] ?? c);
    case 'none':
      return text;
  }
}
