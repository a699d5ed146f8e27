// Connections through the operator's outbound proxy: an HTTP CONNECT tunnel to the target (with
// Basic credentials from the proxy URL), then TLS to the target inside it for https. Every upstream,
// plain http too, is tunnelled, so one connection carries one target and the address guard (checked
// before the tunnel is asked for, in client.ts) holds per connection as it does direct.
import { isIPv6, type Socket } from 'node:net';
import type { buildConnector, Dispatcher } from 'undici';
import { proxyHost } from './route.ts';

/** The outbound proxy could not be reached, or answered CONNECT with something other than 200. */
export class EgressProxyError extends Error {
  readonly code = 'EGRESS_PROXY';
  /** The proxy's answer to CONNECT; 0 when it could not be reached. */
  readonly status: number;
  /** host:port of the proxy (never its credentials). */
  readonly proxy: string;
  constructor(status: number, proxy: string, target: string, cause?: unknown) {
    super(
      status
        ? `the outbound proxy ${proxy} answered ${status} to CONNECT ${target}${status === 407 || status === 401 ? ' (check the credentials in the proxy URL)' : ''}`
        : `cannot reach the outbound proxy ${proxy}${cause instanceof Error ? ` (${(cause as NodeJS.ErrnoException).code ?? cause.message})` : ''}`,
      { cause },
    );
    this.name = 'EgressProxyError';
    this.status = status;
    this.proxy = proxy;
  }
}

type Connector = buildConnector.connector;
type ConnectOptions = buildConnector.Options;

export interface Tunnels {
  /** Opens a connection to `target`:port (a name or an address) through `proxyUrl`, TLS inside for https. */
  connect(proxyUrl: string, target: string, opts: ConnectOptions, cb: buildConnector.Callback): void;
  close(): Promise<void>;
}

/**
 * Tunnels through one or more proxies (one pool each, made on first use). `tls` makes the TLS
 * connection to the target inside the tunnel (extra CAs, the servername the caller asked for).
 */
export function createTunnels(
  undici: typeof import('undici'),
  o: { timeoutMs: number; tls: Connector },
): Tunnels {
  const pools = new Map<
    string,
    { pool: Dispatcher; origin: string; auth: string | undefined; host: string }
  >();
  const poolFor = (proxyUrl: string) => {
    let p = pools.get(proxyUrl);
    if (!p) {
      const u = new URL(proxyUrl);
      const auth = u.username
        ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
        : undefined;
      p = {
        pool: new undici.Pool(u.origin, {
          connect: undici.buildConnector({ timeout: o.timeoutMs }),
          headersTimeout: o.timeoutMs,
        }),
        origin: u.origin,
        auth,
        host: proxyHost(proxyUrl),
      };
      pools.set(proxyUrl, p);
    }
    return p;
  };
  return {
    connect(proxyUrl, target, opts, cb) {
      const p = poolFor(proxyUrl);
      const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
      const authority = `${isIPv6(target) ? `[${target}]` : target}:${port}`;
      const headers: Record<string, string> = { host: authority };
      if (p.auth) headers['proxy-authorization'] = p.auth;
      p.pool.connect({ origin: p.origin, path: authority, headers }).then(
        ({ statusCode, socket: duplex }) => {
          // undici hands over the connection's own socket once the proxy answered.
          const socket = duplex as Socket;
          if (statusCode !== 200) {
            socket.on('error', () => {}).destroy();
            return cb(new EgressProxyError(statusCode, p.host, authority), null);
          }
          if (opts.protocol !== 'https:') return cb(null, socket);
          o.tls({ ...opts, httpSocket: socket }, cb);
        },
        (err: unknown) => cb(new EgressProxyError(0, p.host, authority, err), null),
      );
    },
    async close() {
      await Promise.all([...pools.values()].map((p) => p.pool.close()));
    },
  };
}
