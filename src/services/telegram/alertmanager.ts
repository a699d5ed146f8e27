// An Alertmanager webhook (docs/protocols/alertmanager-webhook.md §2; Grafana's webhook contact point
// sends the same shape) as one readable Telegram message in HTML: firing or resolved, the group's
// labels, each alert's summary, description, own labels, start and source link. Whole alerts are
// left out, never cut in half, so the message stays within Telegram's 4096 characters with its
// markup intact. Framework-free.
import { escapeFor } from './escape.ts';
import { MAX_TEXT } from './message.ts';

export class BadAlert extends Error {
  override name = 'BadAlert';
}

interface Alert {
  status: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A label or annotation map: string values only, at most 64 of them. */
function strings(v: unknown): Record<string, string> {
  if (!isRecord(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v).slice(0, 64)) if (typeof val === 'string') out[k] = val;
  return out;
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');
const html = (s: string) => escapeFor('HTML', s);

/** Cut to `n` characters (an ellipsis marks the cut), before escaping: never inside an entity. */
function cut(s: string, n: number): string {
  const t = s.trim();
  return t.length <= n ? t : `${t.slice(0, n - 1)}…`;
}

/** A link to an http(s) URL, or nothing (a link whose markup would pass 600 characters is left out). */
function link(url: string, text: string): string {
  if (!/^https?:\/\//i.test(url)) return '';
  const a = `<a href="${html(url).replace(/"/g, '&quot;')}">${html(text)}</a>`;
  return a.length <= 600 ? a : '';
}

function when(iso: string): string {
  const t = Date.parse(iso);
  // Alertmanager sends 0001-01-01T00:00:00Z for "not ended".
  if (!Number.isFinite(t) || t < Date.UTC(2000, 0, 1)) return '';
  return `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** `k=v · k=v`, at most 12 labels and `budget` characters of markup. */
function labelLine(labels: Record<string, string>, skip: (k: string) => boolean, budget = 800): string {
  let line = '';
  let n = 0;
  for (const [k, v] of Object.entries(labels)) {
    if (skip(k)) continue;
    const part = `${html(cut(k, 40))}=${html(cut(v, 120))}`;
    const next = line ? `${line} · ${part}` : part;
    if (next.length > budget || ++n > 12) break;
    line = next;
  }
  return line;
}

export function parseWebhook(body: unknown): {
  status: string;
  alerts: Alert[];
  group: Record<string, string>;
  common: Record<string, string>;
  commonAnnotations: Record<string, string>;
  externalURL: string;
  truncated: number;
  receiver: string;
} {
  if (!isRecord(body)) throw new BadAlert('the body must be an Alertmanager webhook JSON object');
  if (!Array.isArray(body['alerts']))
    throw new BadAlert('alerts must be an array (Alertmanager webhook, version 4)');
  const alerts = body['alerts']
    .slice(0, 1000)
    .filter(isRecord)
    .map((a) => ({
      status: str(a['status']),
      labels: strings(a['labels']),
      annotations: strings(a['annotations']),
      startsAt: str(a['startsAt']),
      endsAt: str(a['endsAt']),
      generatorURL: str(a['generatorURL']),
    }));
  const truncated = Number(body['truncatedAlerts']);
  return {
    status: str(body['status']) || (alerts.some((a) => a.status === 'firing') ? 'firing' : 'resolved'),
    alerts,
    group: strings(body['groupLabels']),
    common: strings(body['commonLabels']),
    commonAnnotations: strings(body['commonAnnotations']),
    externalURL: str(body['externalURL']),
    truncated: Number.isSafeInteger(truncated) && truncated > 0 ? truncated : 0,
    receiver: str(body['receiver']),
  };
}

function alertBlock(a: Alert, common: Record<string, string>, mixed: boolean): string {
  const firing = a.status !== 'resolved';
  const title = a.annotations['summary'] ?? a.annotations['title'] ?? a.labels['alertname'] ?? 'alert';
  const lines = [`${mixed ? (firing ? '🔥 ' : '✅ ') : ''}<b>${html(cut(title, 200))}</b>`];
  const desc = a.annotations['description'] ?? a.annotations['message'];
  if (desc) lines.push(html(cut(desc, 600)));
  const own = labelLine(a.labels, (k) => k === 'alertname' || common[k] === a.labels[k]);
  if (own) lines.push(own);
  const since = when(a.startsAt);
  const ended = firing ? '' : when(a.endsAt);
  const meta = [
    since ? `since ${since}` : '',
    ended ? `resolved ${ended}` : '',
    link(a.generatorURL, 'source'),
  ].filter(Boolean);
  if (meta.length) lines.push(meta.join(' · '));
  return lines.join('\n');
}

/**
 * The webhook as Telegram HTML of at most `max` characters, markup included, so never over what
 * Telegram takes. The parts always shown are bounded (a 100-character name and a 200-character
 * summary, escaped, 800 characters of group labels, a 600-character link: about 3000 at worst), so the default `max`
 * always holds them; alerts fill the rest.
 */
export function formatAlerts(body: unknown, max = MAX_TEXT): string {
  const w = parseWebhook(body);
  const firing = w.alerts.filter((a) => a.status !== 'resolved').length;
  const resolved = w.alerts.length - firing;
  const name = w.group['alertname'] ?? w.common['alertname'] ?? (w.receiver || 'alerts');
  const head =
    w.status === 'resolved'
      ? `✅ <b>RESOLVED</b> · <b>${html(cut(name, 100))}</b>`
      : `🔥 <b>FIRING: ${firing}</b>${resolved ? ` (resolved: ${resolved})` : ''} · <b>${html(cut(name, 100))}</b>`;
  const groupLine = labelLine({ ...w.common, ...w.group }, (k) => k === 'alertname');
  const parts = [head];
  if (groupLine) parts.push(groupLine);
  const common = w.commonAnnotations['summary'] && w.alerts.length > 1 ? w.commonAnnotations['summary'] : '';
  if (common) parts.push(html(cut(common, 200)));
  const footer = link(w.externalURL, 'Alertmanager');
  const mixed = firing > 0 && resolved > 0;

  const tailOf = (more: number) =>
    [more ? `… and ${more} more alert${more === 1 ? '' : 's'}` : '', footer].filter(Boolean).join('\n');
  const withTail = (t: string, more: number) => {
    const tail = tailOf(more);
    return tail ? `${t}\n\n${tail}` : t;
  };
  let text = parts.join('\n');
  let shown = 0;
  // Firing alerts first: when not all fit, the ones that still need someone are the ones shown.
  const ordered = [...w.alerts].sort(
    (a, b) => Number(a.status === 'resolved') - Number(b.status === 'resolved'),
  );
  for (const a of ordered) {
    const next = `${text}\n\n${alertBlock(a, w.common, mixed)}`;
    if (withTail(next, w.alerts.length - shown - 1 + w.truncated).length > max) break;
    text = next;
    shown++;
  }
  text = withTail(text, w.alerts.length - shown + w.truncated);
  return text;
}
