// Human-readable log lines for a terminal: pino's JSON line (already redacted) turned into
// `12:04:05.123 WARN  proxy  upstream failed  host=... status=502`. Production keeps JSON; this is
// for someone reading `npm start` output. Values are escaped so a client-supplied path cannot
// smuggle terminal control sequences into the operator's screen.

const LEVELS: Record<number, [string, string]> = {
  10: ['TRACE', '90'],
  20: ['DEBUG', '90'],
  30: ['INFO ', '32'],
  40: ['WARN ', '33'],
  50: ['ERROR', '31'],
  60: ['FATAL', '35'],
};

/** Fields shown elsewhere on the line, or noise for a reader (pid and host are the same on every line). */
const SKIP = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'svc', 'reqId', 'req', 'res', 'err']);

const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const NEEDS_QUOTES = /[\s"=\\\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function escapeControls(s: string): string {
  return s.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function value(v: unknown): string {
  if (typeof v === 'string') {
    return v === '' || NEEDS_QUOTES.test(v) ? escapeControls(JSON.stringify(v)) : v;
  }
  if (v !== null && typeof v === 'object') return escapeControls(JSON.stringify(v));
  return String(v);
}

function clock(ms: unknown): string {
  const d = new Date(typeof ms === 'number' ? ms : Date.now());
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['kB', 'MB', 'GB'];
  let v = n / 1024;
  let i = 0;
  for (; v >= 1024 && i < units.length - 1; i++) v /= 1024;
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A status painted by its class on a terminal: a server fault red, a refusal yellow. */
const statusColour = (s: unknown) => (Number(s) >= 500 ? '31' : Number(s) >= 400 ? '33' : '32');

/**
 * Fastify's request and response objects read as `GET /path from 1.2.3.4` and
 * `-> 200 in 3 ms, 1.2 kB`: the request's one line when it ends.
 */
function exchange(o: Record<string, unknown>, paint: (c: string, s: string) => string): string[] {
  const out: string[] = [];
  const req = o['req'] as Record<string, unknown> | undefined;
  if (req && typeof req === 'object')
    out.push(
      `${value(req['method'] ?? '')} ${value(req['url'] ?? '')} from ${value(req['remoteAddress'] ?? '?')}`,
    );
  const res = o['res'] as Record<string, unknown> | undefined;
  if (res && typeof res === 'object') {
    const rt = o['responseTime'];
    const size = typeof res['size'] === 'number' ? `, ${bytes(res['size'])}` : '';
    const status = paint(statusColour(res['statusCode']), value(res['statusCode']));
    out.push(`-> ${status}${typeof rt === 'number' ? ` in ${Math.round(rt)} ms` : ''}${size}`);
  }
  return out;
}

/** One pino JSON line as one readable line (plus the stack, indented, for errors that have one). */
export function prettyLine(line: string, color: boolean): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const [name, code] = LEVELS[Number(o['level'])] ?? [String(o['level']).toUpperCase().padEnd(5), '0'];
  const paint = (c: string, s: string) => (color ? `\u001b[${c}m${s}\u001b[0m` : s);
  const head = [paint('90', clock(o['time'])), paint(code, name)];
  if (typeof o['svc'] === 'string') head.push(paint('36', `[${value(o['svc'])}]`));
  head.push(escapeControls(String(o['msg'] ?? '')));
  const parts = exchange(o, paint);
  for (const [k, v] of Object.entries(o)) {
    if (SKIP.has(k) || v === undefined || k === 'responseTime') continue;
    parts.push(`${paint('90', `${k}=`)}${value(v)}`);
  }
  const err = o['err'] as Record<string, unknown> | undefined;
  let stack = '';
  if (err && typeof err === 'object') {
    const text = `${String(err['type'] ?? 'Error')}: ${String(err['message'] ?? '')}`;
    parts.push(`err=${value(text)}`);
    if (err['code'] !== undefined) parts.push(`code=${value(err['code'])}`);
    if (err['cause'] !== undefined) parts.push(`cause=${value(err['cause'])}`);
    if (typeof err['stack'] === 'string') {
      const frames = err['stack'].split('\n').slice(1);
      if (frames.length) stack = `\n${frames.map((f) => `    ${escapeControls(f.trim())}`).join('\n')}`;
    }
  }
  if (typeof o['reqId'] === 'string') parts.push(paint('90', `reqId=${value(o['reqId'])}`));
  return `${head.join(' ')}${parts.length ? `  ${parts.join(' ')}` : ''}${stack}\n`;
}
