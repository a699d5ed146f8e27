// The admin page: asks for the token (kept in this tab's sessionStorage, sent only as an
// Authorization header), reads GET /rest/api/v1/admin/stats and draws it: charts built as SVG by
// chart.ts, each with a table saying the same in text. Every figure from the server is set as text,
// never as markup (client addresses and proxied paths come from strangers). The answer's shape is
// the server's own type module (src/services/admin/stats.ts), shared with the route.
import type { AdminStats as Stats, TopRow } from '../../src/services/admin/stats.ts';
import { bar, columns, formatBytes, formatCount } from './chart.ts';
import { byId, setStatus } from './dom.ts';

const KEY = 'devutil-admin-token';
const REFRESH_MS = 15_000;

type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) if (c) e.append(c);
  return e;
}

interface Column<R> {
  head: string;
  cell: (r: R) => Child;
  num?: boolean;
}

function table<R>(name: string, caption: string, rows: R[], cols: Column<R>[], empty: string): HTMLElement {
  if (!rows.length)
    return h(
      'div',
      { class: 'admin-table', 'data-empty': name },
      h('h3', {}, caption),
      h('p', { class: 'small' }, empty),
    );
  const head = h(
    'tr',
    {},
    ...cols.map((c) => h('th', { scope: 'col', ...(c.num ? { class: 'num' } : {}) }, c.head)),
  );
  const body = rows.map((r) =>
    h('tr', {}, ...cols.map((c) => h('td', c.num ? { class: 'num' } : {}, c.cell(r)))),
  );
  const t = h(
    'table',
    { 'data-table': name },
    h('caption', {}, caption),
    h('thead', {}, head),
    h('tbody', {}, ...body),
  );
  return h('div', { class: 'admin-table scroll' }, t);
}

/** A number with its bar: the bar is decorative, the text is what screen readers and tests read. */
function withBar(text: string, value: number, max: number, cls = 's0'): HTMLElement {
  return h('span', { class: 'with-bar' }, h('span', {}, text), bar(value, max, cls));
}

const maxOf = <R>(rows: R[], f: (r: R) => number) => Math.max(0, ...rows.map(f));

function timeLabel(t: number, window: Stats['window']): string {
  const d = new Date(t);
  const hm = d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
  return window === 'day' ? `${d.toLocaleDateString('en-GB', { day: '2-digit', month: 'short' })} ${hm}` : hm;
}

function traffic(s: Stats): Node[] {
  const per = s.window === 'hour' ? 'minute' : '15 minutes';
  const span = s.window === 'hour' ? 'the last hour' : 'the last day';
  const labels = s.series.map((p) => timeLabel(p.t, s.window));
  const t = s.totals;
  const tiles = h(
    'dl',
    { class: 'stats admin-totals' },
    ...[
      ['Requests', formatCount(t.requests)],
      ['Errors (4xx/5xx)', formatCount(t.errors)],
      ['Bytes sent', formatBytes(t.bytesOut)],
      ['Bytes received', formatBytes(t.bytesIn)],
      ['Instances', String(s.instances)],
    ].map(([k, v]) =>
      h('div', {}, h('dt', {}, k as string), h('dd', { 'data-total': k as string }, v as string)),
    ),
  );
  const peak = (vals: number[]) => Math.max(0, ...vals);
  const requests = columns({
    title: `Requests per ${per}, ${span}`,
    desc: `${formatCount(t.requests)} requests, ${formatCount(t.errors)} errors; at most ${formatCount(peak(s.series.map((p) => p.requests)))} in one step.`,
    labels,
    stacks: [
      { name: 'answered', cls: 's0', values: s.series.map((p) => p.requests - p.errors) },
      { name: 'errors', cls: 's1', values: s.series.map((p) => p.errors) },
    ],
    format: formatCount,
  });
  requests.dataset['chart'] = 'requests';
  const bytes = columns({
    title: `Bytes sent per ${per}, ${span}`,
    desc: `${formatBytes(t.bytesOut)} sent and ${formatBytes(t.bytesIn)} received.`,
    labels,
    stacks: [
      { name: 'sent', cls: 's0', values: s.series.map((p) => p.bytesOut) },
      { name: 'received', cls: 's2', values: s.series.map((p) => p.bytesIn) },
    ],
    format: formatBytes,
  });
  bytes.dataset['chart'] = 'bytes';
  const steps = s.series.filter((p) => p.requests > 0);
  const u = s.utilities;
  return [
    tiles,
    h('div', { class: 'grid2 charts' }, h('figure', {}, requests), h('figure', {}, bytes)),
    h(
      'p',
      { class: 'legend small' },
      h('span', { class: 'key s0' }),
      'answered / sent ',
      h('span', { class: 'key s1' }),
      'errors ',
      h('span', { class: 'key s2' }),
      'received',
    ),
    h(
      'details',
      {},
      h('summary', {}, `The charts as a table (${steps.length} busy steps)`),
      table(
        'series',
        `Traffic per ${per}`,
        steps,
        [
          { head: 'From', cell: (p) => timeLabel(p.t, s.window) },
          { head: 'Requests', cell: (p) => formatCount(p.requests), num: true },
          { head: 'Errors', cell: (p) => formatCount(p.errors), num: true },
          { head: 'Sent', cell: (p) => formatBytes(p.bytesOut), num: true },
          { head: 'Received', cell: (p) => formatBytes(p.bytesIn), num: true },
        ],
        'No requests in this window.',
      ),
    ),
    table(
      'utilities',
      'Per utility',
      u,
      [
        { head: 'Utility', cell: (r) => r.name },
        {
          head: 'Requests',
          cell: (r) =>
            withBar(
              formatCount(r.requests),
              r.requests,
              maxOf(u, (r) => r.requests),
            ),
          num: true,
        },
        { head: 'Errors', cell: (r) => formatCount(r.errors), num: true },
        {
          head: 'Sent',
          cell: (r) =>
            withBar(
              formatBytes(r.bytesOut),
              r.bytesOut,
              maxOf(u, (r) => r.bytesOut),
            ),
          num: true,
        },
        { head: 'Received', cell: (r) => formatBytes(r.bytesIn), num: true },
      ],
      'No requests in this window.',
    ),
  ];
}

function topTable(
  name: string,
  caption: string,
  rows: TopRow[],
  first: string,
  by: 'bytes' | 'requests',
): HTMLElement {
  const max = maxOf(rows, (r) => (by === 'bytes' ? (r.bytes ?? 0) : r.requests));
  const cols: Column<TopRow>[] = [{ head: first, cell: (r) => h('span', { class: 'key-text' }, r.key) }];
  if (by === 'bytes') {
    cols.push({
      head: 'Bytes',
      cell: (r) => withBar(formatBytes(r.bytes ?? 0), r.bytes ?? 0, max),
      num: true,
    });
    cols.push({ head: 'Requests', cell: (r) => formatCount(r.requests), num: true });
  } else
    cols.push({
      head: 'Requests',
      cell: (r) => withBar(formatCount(r.requests), r.requests, max),
      num: true,
    });
  return table(name, caption, rows, cols, 'Nothing yet in this window.');
}

function resources(s: Stats): Node[] {
  const caches = table(
    'caches',
    'Cache hit ratio',
    s.caches,
    [
      { head: 'Cache', cell: (c) => c.name },
      {
        head: 'Hit ratio',
        cell: (c) =>
          c.hitRatio === null
            ? 'no lookups'
            : withBar(`${Math.round(c.hitRatio * 100)}%`, c.hitRatio, 1, 's3'),
        num: true,
      },
      { head: 'Hits', cell: (c) => formatCount(c.hits), num: true },
      { head: 'Misses', cell: (c) => formatCount(c.misses), num: true },
    ],
    'No cache is enabled.',
  );
  const r = s.relay;
  const relay = h(
    'div',
    { class: 'admin-table' },
    h('h3', {}, 'Syncthing relay'),
    h(
      'dl',
      { class: 'stats', 'data-table': 'relay' },
      h(
        'div',
        {},
        h('dt', {}, 'Open sessions'),
        h('dd', {}, r.running ? formatCount(r.activeSessions) : 'not running'),
      ),
      h('div', {}, h('dt', {}, 'Sessions started'), h('dd', {}, formatCount(r.sessions))),
      h('div', {}, h('dt', {}, 'Bytes relayed'), h('dd', {}, formatBytes(r.bytes))),
    ),
  );
  const queues = table(
    'queues',
    'Render queues (waiting now)',
    s.queues,
    [
      { head: 'Queue', cell: (q) => q.name },
      {
        head: 'Waiting',
        cell: (q) => withBar(`${formatCount(q.queued)} of ${formatCount(q.limit)}`, q.queued, q.limit, 's1'),
        num: true,
      },
    ],
    'No render queue is enabled.',
  );
  const allow = [
    ...s.budgets.map((b) => ({ ...b, kind: 'byte budget' })),
    ...s.quotas.map((q) => ({ ...q, kind: 'storage quota' })),
  ];
  const budgets = table(
    'budgets',
    'Budgets and quotas used',
    allow,
    [
      { head: 'Name', cell: (b) => `${b.name} (${b.kind})` },
      {
        head: 'Used',
        cell: (b) =>
          withBar(
            `${formatBytes(b.used)} of ${b.limit ? formatBytes(b.limit) : 'no total limit'}`,
            b.used,
            b.limit,
            's1',
          ),
        num: true,
      },
      {
        head: 'Per client',
        cell: (b) => (b.clientLimit ? formatBytes(b.clientLimit) : '-'),
        num: true,
      },
    ],
    'No byte budget or quota is configured.',
  );
  const eco = h(
    'div',
    { class: 'admin-table' },
    h('h3', {}, 'Proxy ecosystems'),
    h(
      'p',
      { 'data-table': 'proxy-ecosystems' },
      s.proxyEcosystems.length ? s.proxyEcosystems.join(', ') : 'host-path form only',
    ),
  );
  return [caches, relay, queues, budgets, eco];
}

/** Names of the ecosystems a package key starts with (`npm/left-pad`, as the proxy names them). */
export const ECOSYSTEM_NAMES: Readonly<Record<string, string>> = {
  pypi: 'PyPI',
  debian: 'Debian',
  npm: 'npm',
  go: 'Go',
  maven: 'Maven',
  hf: 'Hugging Face',
  oci: 'OCI images',
};

/**
 * The packages table's caption, naming the ecosystems its rows are from (each key starts with its
 * ecosystem), so it says what is counted whichever ecosystem profiles the proxy serves.
 */
export function packagesCaption(rows: readonly Pick<TopRow, 'key'>[]): string {
  const seen = [...new Set(rows.map((r) => r.key.split('/')[0] ?? ''))].filter(Boolean);
  const names = seen.map((e) => ECOSYSTEM_NAMES[e] ?? e);
  return names.length ? `Packages (${names.join(', ')})` : 'Packages';
}

function render(s: Stats): void {
  const fill = (id: string, nodes: Node[]) => byId(id)?.replaceChildren(...nodes);
  fill('admin-traffic', traffic(s));
  const c = s.topClients;
  fill('admin-clients', [
    topTable('clients-bytes', 'By bytes', c.byBytes, 'Address', 'bytes'),
    topTable('clients-requests', 'By requests', c.byRequests, 'Address', 'requests'),
  ]);
  const p = s.topProxied;
  fill('admin-proxied', [
    topTable('repositories', 'GitHub repositories', p.repositories, 'Repository', 'bytes'),
    topTable('packages', packagesCaption(p.packages), p.packages, 'Ecosystem/package', 'bytes'),
    topTable('files', 'Files', p.files, 'File', 'bytes'),
  ]);
  fill('admin-resources', resources(s));
}

export function initAdmin(): void {
  const form = byId<HTMLFormElement>('admin-login-form');
  const login = byId('admin-login');
  const dash = byId('admin-dash');
  const signout = byId<HTMLButtonElement>('admin-signout');
  const input = byId<HTMLInputElement>('admin-token');
  if (!form || !login || !dash || !signout || !input) return;
  let span: Stats['window'] = 'hour';
  let timer: ReturnType<typeof setInterval> | undefined;

  const show = (signedIn: boolean) => {
    login.hidden = signedIn;
    dash.hidden = !signedIn;
    signout.hidden = !signedIn;
    if (!signedIn) {
      clearInterval(timer);
      for (const id of ['admin-traffic', 'admin-clients', 'admin-proxied', 'admin-resources'])
        byId(id)?.replaceChildren();
    }
  };

  // Signed in through single sign-on: the session cookie opens the figures, no token is asked.
  const sso = document.body.dataset['session'] === 'oidc';
  const load = async () => {
    const token = sso ? null : sessionStorage.getItem(KEY);
    if (!sso && !token) return show(false);
    let res: Response;
    try {
      res = await fetch(`/rest/api/v1/admin/stats?window=${span}`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
        cache: 'no-store',
        credentials: sso ? 'same-origin' : 'omit',
      });
    } catch {
      return setStatus('admin-status', 'The server did not answer; retrying.', 'error');
    }
    if (res.status === 401 && sso) {
      // The session ended (signed out elsewhere, expired): sign in again.
      location.assign('/admin');
      return;
    }
    if (res.status === 401) {
      sessionStorage.removeItem(KEY);
      show(false);
      return setStatus('admin-login-status', 'That token was not accepted.', 'error');
    }
    const body = (await res.json().catch(() => null)) as { data?: Stats; message?: string } | null;
    if (!res.ok || !body?.data)
      return setStatus('admin-status', body?.message ?? `The server answered ${res.status}.`, 'error');
    show(true);
    render(body.data);
    const scope = body.data.shared ? `all ${body.data.instances} instances (Redis)` : 'this instance';
    setStatus(
      'admin-status',
      `Figures of ${scope}, updated ${new Date().toLocaleTimeString('en-GB')}.`,
      'ok',
    );
  };

  const refresh = () => {
    clearInterval(timer);
    if (!sso && !sessionStorage.getItem(KEY)) return;
    timer = setInterval(() => {
      if (!document.hidden) void load();
    }, REFRESH_MS);
  };

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    input.value = '';
    if (!token) return;
    sessionStorage.setItem(KEY, token);
    setStatus('admin-login-status', '');
    void load().then(refresh);
  });
  // With single sign-on Sign out is the page's form (POST /admin/logout): nothing to do here.
  if (!sso)
    signout.addEventListener('click', () => {
      sessionStorage.removeItem(KEY);
      show(false);
      input.focus();
    });
  for (const b of Array.from(document.querySelectorAll<HTMLButtonElement>('[data-window]'))) {
    b.addEventListener('click', () => {
      span = b.dataset['window'] === 'day' ? 'day' : 'hour';
      for (const o of Array.from(document.querySelectorAll<HTMLButtonElement>('[data-window]')))
        o.setAttribute('aria-pressed', String(o === b));
      void load();
    });
  }
  if (sso || sessionStorage.getItem(KEY)) void load().then(refresh);
  else show(false);
}
