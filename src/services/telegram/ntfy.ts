// ntfy's publish API (docs/telegram.md, ntfy and Gotify), read as ntfy's server reads it: a topic's
// PUT/POST with the message as the body and its options in headers (X-Title, Title or t...) or the
// query string (title=...), headers first; or JSON to the server's root with the topic inside.
// The topic is a recipient token. Header values are UTF-8 (or RFC 2047 encoded words), as ntfy
// takes them. Features that cannot become one Telegram message now are refused as ntfy refuses a
// feature its server has off: uploaded attachments, e-mail, phone calls, scheduled delivery.
// Answers are ntfy's message object; failures ntfy's {code, http, error}. Framework-free.

import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Envelope } from '../../infra/http/envelopes.ts';
import { AppError } from '../../infra/http/errors.ts';
import { JsonError, parseJson } from '../../infra/http/strict-json.ts';
import type { Notice } from './notice.ts';

export interface NtfyRequest {
  headers: IncomingHttpHeaders;
  /** The parsed query string (a name given twice: its first value counts, as in ntfy). */
  query: Record<string, unknown>;
  body: Buffer | undefined;
}

/** An ntfy refusal: `ntfy` is ntfy's own 5-digit code for it. */
const refuse = (ntfy: number, message: string) =>
  new AppError(`NTFY_${ntfy}`, Math.floor(ntfy / 100), message);

// ntfy's codes for what every route may answer (server/errors.go); anything else is status * 100.
const BY_STATUS: Record<number, number> = { 401: 40101, 403: 40301, 404: 40401, 413: 41301, 429: 42901 };

export const NTFY_ENVELOPE: Envelope = {
  contentType: 'application/json',
  body(status, message, code) {
    const own = /^NTFY_(\d{5})$/.exec(code)?.[1];
    const n = own ? Number(own) : (BY_STATUS[status] ?? status * 100);
    return `${JSON.stringify({ code: n, http: status, error: message })}\n`;
  },
};

/** A header's text: its bytes as UTF-8 (Latin-1 when they are not), encoded words decoded. */
function headerText(v: string): string {
  const bytes = Buffer.from(v, 'latin1');
  return decodeWords(isUtf8(bytes) ? bytes.toString('utf8') : v).trim();
}

const WORD = /=\?([A-Za-z0-9_-]{1,40})\?([BbQq])\?([^?\s]*)\?=/g;

/** RFC 2047 encoded words (=?UTF-8?B?...?=), as ntfy's maybeDecodeHeader decodes them. */
function decodeWords(s: string): string {
  if (!s.includes('=?')) return s;
  // Whitespace between two encoded words is not part of the text (RFC 2047 §6.2).
  return s.replace(/\?=\s+=\?/g, '?==?').replace(WORD, (all, cs: string, enc: string, text: string) => {
    const charset = cs.toLowerCase();
    const utf8 = charset === 'utf-8' || charset === 'utf8' || charset === 'us-ascii';
    if (!utf8 && charset !== 'iso-8859-1' && charset !== 'latin1') return all;
    const bytes =
      enc.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64')
        : Buffer.from(
            text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
            'latin1',
          );
    return bytes.toString(utf8 ? 'utf8' : 'latin1');
  });
}

const first = (v: unknown): string =>
  typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : '';

/** ntfy's readParam: the first of `names` given as a header, else as a query parameter. */
function param(r: NtfyRequest, ...names: string[]): string {
  for (const n of names) {
    const v = r.headers[n];
    const t = typeof v === 'string' ? headerText(v) : '';
    if (t) return t;
  }
  for (const n of names) {
    const t = first(r.query[n]).trim();
    if (t) return t;
  }
  return '';
}

const PRIORITIES: Record<string, number> = { min: 1, low: 2, default: 3, high: 4, max: 5, urgent: 5 };

function priorityOf(v: unknown): number {
  if (v === undefined || v === '' || v === 0) return 3;
  const s = String(v).trim().toLowerCase();
  const n = /^[1-5]$/.test(s) ? Number(s) : PRIORITIES[s];
  if (n === undefined)
    throw refuse(40007, 'invalid priority parameter: 1-5, or min, low, default, high, max, urgent');
  return n;
}

const yes = (v: string) => ['1', 'yes', 'true'].includes(v.toLowerCase());

interface Fields {
  title: string;
  message: string;
  priority: unknown;
  tags: string[];
  click: string;
  attach: string;
  filename: string;
  markdown: boolean;
  email: string;
  call: string;
  delay: string;
}

function notice(f: Fields): Notice {
  if (f.email)
    throw refuse(40001, 'e-mail notifications are not enabled: this server sends to Telegram only');
  if (f.call) throw refuse(40000, 'phone calls are not enabled: this server sends to Telegram only');
  if (f.delay)
    throw refuse(
      40000,
      'scheduled delivery is not supported: this server sends each message to Telegram at once',
    );
  if (f.attach && !/^https?:\/\/./i.test(f.attach))
    throw refuse(40013, 'invalid request: attachment URL is invalid (http or https only)');
  const name = f.filename || (f.attach ? attachName(f.attach) : '');
  return {
    title: f.title,
    message: f.message || (f.attach ? `You received a file: ${name}` : 'triggered'),
    markdown: f.markdown,
    priority: priorityOf(f.priority),
    tags: f.tags.map((t) => t.trim()).filter(Boolean),
    click: f.click,
    attach: f.attach ? { url: f.attach, name } : null,
  };
}

/** The attachment's name as ntfy makes it: the URL path's last segment, or "attachment". */
function attachName(url: string): string {
  try {
    const last = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
    return last && last !== '.' ? last : 'attachment';
  } catch {
    return 'attachment';
  }
}

/** A topic's publish (PUT/POST /<token>, or GET /<token>/publish?message=...). Throws AppError. */
export function ntfyPublish(r: NtfyRequest): Notice {
  const attach = param(r, 'x-attach', 'attach', 'a');
  const filename = param(r, 'x-filename', 'filename', 'file', 'f');
  const body = r.body ?? Buffer.alloc(0);
  // ntfy keeps a body with a filename, or one that is not UTF-8 text, as an uploaded attachment.
  if (!attach && (filename || !isUtf8(body)))
    throw refuse(40014, 'invalid request: attachments not allowed; give a link with Attach: <url>');
  if (!isUtf8(body)) throw refuse(40011, 'invalid message: message must be UTF-8 encoded');
  const type = String(r.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  return notice({
    title: param(r, 'x-title', 'title', 't'),
    message: body.toString('utf8').trim() || param(r, 'x-message', 'message', 'm').replace(/\\n/g, '\n'),
    priority: param(r, 'x-priority', 'priority', 'prio', 'p'),
    tags: param(r, 'x-tags', 'tags', 'tag', 'ta').split(','),
    click: param(r, 'x-click', 'click'),
    attach,
    filename,
    markdown: yes(param(r, 'x-markdown', 'markdown', 'md')) || type === 'text/markdown',
    email: param(r, 'x-email', 'x-e-mail', 'email', 'e-mail', 'mail', 'e'),
    call: param(r, 'x-call', 'call'),
    delay: param(r, 'x-delay', 'delay', 'x-at', 'at', 'x-in', 'in'),
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** ntfy's JSON publish (POST to the server's root): the topic and the message. Throws AppError. */
export function ntfyJson(body: Buffer | undefined, maxDepth: number): { topic: string; notice: Notice } {
  const text = body?.toString('utf8') ?? '';
  let m: unknown;
  try {
    m = parseJson(text, { duplicates: 'refuse', maxDepth });
  } catch (err) {
    if (err instanceof JsonError)
      throw refuse(40024, `invalid request: request body must be valid JSON (${err.message})`);
    throw err;
  }
  if (!isRecord(m)) throw refuse(40017, 'invalid request: request body must be message JSON');
  const str = (k: string): string => {
    const v = m[k];
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') throw refuse(40024, `invalid request: ${k} must be a string`);
    return v;
  };
  const tags = m['tags'];
  if (tags !== undefined && !(Array.isArray(tags) && tags.every((t) => typeof t === 'string')))
    throw refuse(40024, 'invalid request: tags must be a list of strings');
  const priority = m['priority'];
  if (priority !== undefined && typeof priority !== 'number' && typeof priority !== 'string')
    throw refuse(40007, 'invalid priority parameter: 1-5, or min, low, default, high, max, urgent');
  return {
    topic: str('topic'),
    notice: notice({
      title: str('title'),
      message: str('message').trim(),
      priority,
      tags: (tags as string[] | undefined) ?? [],
      click: str('click'),
      attach: str('attach'),
      filename: str('filename'),
      markdown: m['markdown'] === true,
      email: str('email'),
      call: m['call'] === undefined ? '' : String(m['call']),
      delay: str('delay'),
    }),
  };
}

/**
 * ntfy's answer to a publish: the message object, its topic echoed as ntfy does (the token, to the
 * caller that sent it, in a no-store answer; never in a log). `sent` is Telegram's Message.
 */
export function ntfyAnswer(topic: string, n: Notice, sent: Record<string, unknown>): Record<string, unknown> {
  const time = typeof sent['date'] === 'number' ? sent['date'] : Math.floor(Date.now() / 1000);
  return {
    id: randomBytes(9).toString('base64url').replace(/[-_]/g, 'x').slice(0, 12),
    time,
    expires: time + 12 * 3600,
    event: 'message',
    topic,
    ...(n.title ? { title: n.title } : {}),
    message: n.message,
    ...(n.priority !== 3 ? { priority: n.priority } : {}),
    ...(n.tags.length ? { tags: n.tags } : {}),
    ...(n.click ? { click: n.click } : {}),
    ...(n.attach ? { attachment: { name: n.attach.name, url: n.attach.url } } : {}),
    ...(n.markdown ? { content_type: 'text/markdown' } : {}),
  };
}
