// A browser stand-in for redirect flows without a browser: node:http with a cookie jar (per host,
// honouring Path and Max-Age=0 removals), a host map (idp.test -> 127.0.0.1:<port>, as a resolver
// would), manual redirects, and a follow() that walks a chain of redirects the way a browser does.
import { request } from 'node:http';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  url: string;
}

interface Cookie {
  value: string;
  path: string;
}

export class CookieClient {
  /** host -> cookie name -> cookie */
  readonly jar = new Map<string, Map<string, Cookie>>();
  private readonly hosts: Map<string, string>;

  /** `hosts`: name -> 127.0.0.1:<port> for names no resolver knows. */
  constructor(hosts: Record<string, string> = {}) {
    this.hosts = new Map(Object.entries(hosts));
  }

  cookie(host: string, name: string): string | undefined {
    return this.jar.get(host)?.get(name)?.value;
  }

  setCookie(host: string, name: string, value: string, path = '/'): void {
    const m = this.jar.get(host) ?? new Map<string, Cookie>();
    this.jar.set(host, m);
    m.set(name, { value, path });
  }

  async send(
    method: string,
    url: string,
    o: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const u = new URL(url);
    const mapped = this.hosts.get(u.host) ?? this.hosts.get(u.hostname);
    const [addr, port] = mapped ? mapped.split(':') : [u.hostname, u.port];
    const cookies = [...(this.jar.get(u.hostname)?.entries() ?? [])]
      .filter(
        ([, c]) =>
          u.pathname === c.path || u.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`),
      )
      .map(([n, c]) => `${n}=${c.value}`)
      .join('; ');
    const headers: Record<string, string> = { host: u.host, ...o.headers };
    if (cookies) headers['cookie'] = cookies;
    if (o.body !== undefined) {
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
      headers['content-length'] = String(Buffer.byteLength(o.body));
    }
    const res = await new Promise<Answer>((resolve, reject) => {
      const req = request(
        { host: addr, port: Number(port || 80), method, path: `${u.pathname}${u.search}`, headers },
        (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () =>
            resolve({
              status: r.statusCode ?? 0,
              headers: r.headers,
              body: Buffer.concat(chunks).toString(),
              url,
            }),
          );
          r.on('error', reject);
        },
      );
      req.setTimeout(15_000, () => req.destroy(new Error(`no answer from ${method} ${url}`)));
      req.on('error', reject);
      req.end(o.body);
    });
    for (const line of ([] as string[]).concat(res.headers['set-cookie'] ?? [])) this.store(u, line);
    return res;
  }

  private store(u: URL, line: string): void {
    const [pair = '', ...attrs] = line.split(';').map((s) => s.trim());
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    let path = '/';
    let gone = value === '';
    for (const a of attrs) {
      const [k = '', v = ''] = a.split('=');
      if (k.toLowerCase() === 'path') path = v;
      if (k.toLowerCase() === 'max-age' && Number(v) <= 0) gone = true;
      if (k.toLowerCase() === 'expires' && Date.parse(v) < Date.now()) gone = true;
    }
    if (gone) this.jar.get(u.hostname)?.delete(name);
    else this.setCookie(u.hostname, name, value, path);
  }

  /**
   * Follows redirects from `url` (GET after 301/302/303) until an answer that is not one, or one
   * whose target `stop` accepts (returned unfollowed).
   */
  async follow(url: string, stop: (target: URL) => boolean = () => false, max = 12): Promise<Answer> {
    let res = await this.send('GET', url);
    for (let i = 0; i < max && res.status >= 300 && res.status < 400; i++) {
      const loc = res.headers['location'];
      if (typeof loc !== 'string') return res;
      const next = new URL(loc, res.url);
      if (stop(next)) return res;
      res = await this.send('GET', next.href);
    }
    return res;
  }
}
