// The Caller IP tool: the address with its details from /rest/api/v1/ip?details=1, and the
// visitor's IPv4 and IPv6 addresses read from this server's single-stack host names (each <strong
// data-url> the page renders when ip.v4Url / ip.v6Url are configured).
import { byId, setStatus } from './dom.ts';

interface IpData {
  ip: string;
  scope?: string;
  country?: string | null;
  asn?: string | null;
  org?: string | null;
  /** Only where a city database is installed. */
  city?: string | null;
  region?: string | null;
  timezone?: string | null;
}

const SCOPES: Record<string, string> = {
  public: 'public address',
  private: 'private network address',
  shared: 'carrier-grade NAT address',
  loopback: 'loopback (this machine)',
  'link-local': 'link-local address',
  documentation: 'documentation address',
  unspecified: 'unspecified address',
  multicast: 'multicast address',
  reserved: 'reserved address',
};

async function ask(base: string, timeoutMs: number): Promise<IpData> {
  const r = await fetch(`${base}/rest/api/v1/ip?details=1`, {
    cache: 'no-store',
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await r.json()) as { data?: IpData | null; message?: string };
  if (!r.ok || !body.data?.ip) throw new Error(body.message ?? `HTTP ${r.status}`);
  return body.data;
}

function countryName(code: string): string {
  try {
    const name = new Intl.DisplayNames(undefined, { type: 'region' }).of(code);
    return name && name !== code ? `${name} (${code})` : code;
  } catch {
    return code;
  }
}

function show(d: IpData): void {
  const set = (id: string, text: string) => {
    const el = byId(id);
    if (el) el.textContent = text;
  };
  const none = d.scope === 'public' ? 'unknown' : '–';
  set('ip-value', d.ip);
  set('ip-scope', SCOPES[d.scope ?? ''] ?? d.scope ?? '–');
  set('ip-country', d.country ? countryName(d.country) : none);
  set('ip-asn', d.asn ?? none);
  set('ip-org', d.org ?? none);
  for (const k of ['city', 'timezone'] as const) {
    const row = byId(`ip-${k}-row`);
    if (row) row.hidden = !(k in d);
  }
  if ('city' in d)
    set('ip-city', d.city ? [...new Set([d.city, d.region].filter(Boolean))].join(', ') : none);
  if ('timezone' in d) set('ip-timezone', d.timezone ?? none);
  const box = byId('ip-details');
  if (box) box.hidden = false;
}

async function check(): Promise<void> {
  try {
    // The first details request may load the address data, seconds on a busy server.
    show(await ask('', 30_000));
    setStatus('ip-status', `Checked at ${new Date().toLocaleTimeString()}.`, 'ok');
  } catch (err) {
    setStatus('ip-status', `Could not check: ${(err as Error).message}`, 'error');
  }
}

/** One family's address through its single-stack host; a network without it fails to connect. */
async function checkStack(id: 'v4' | 'v6'): Promise<void> {
  const out = byId(`ip-${id}`);
  const row = byId(`ip-${id}-row`);
  const url = out?.dataset['url'];
  if (!out || !row || !url) return;
  row.hidden = false;
  out.textContent = 'checking…';
  try {
    const d = await ask(url, 8000);
    out.textContent = d.ip;
    out.dataset['kind'] = 'ok';
  } catch {
    out.textContent = id === 'v4' ? 'none (no IPv4 connectivity)' : 'none (no IPv6 connectivity)';
    out.dataset['kind'] = 'none';
  }
}

export function initIp(): void {
  const button = byId<HTMLButtonElement>('ip-refresh');
  if (!button || !byId('ip-value')) return;
  const all = () => Promise.all([check(), checkStack('v4'), checkStack('v6')]);
  button.addEventListener('click', () => void all());
  void all();
}
