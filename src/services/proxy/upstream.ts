// The upstream dispatcher: one undici Agent (keep-alive pools, no redirects, no decompression)
// whose connector applies --resolve style overrides and the connect-time address guard.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { readFileSync } from 'node:fs';
import type { LookupFunction } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import { Agent, buildConnector } from 'undici';
import { isBlockedAddress, isLoopback } from './netguard.ts';

export interface Override {
  address: string;
  port: number;
}

export class BlockedAddressError extends Error {
  readonly code = 'EPROXYBLOCKED';
}

/** `host=address:port` entries, like curl --resolve. */
export function parseResolve(entries: readonly string[]): Map<string, Override> {
  const out = new Map<string, Override>();
  for (const e of entries) {
    const m = /^([^=]+)=(.+):(\d+)$/.exec(e.trim());
    if (!m) continue;
    out.set(m[1]!.toLowerCase(), { address: m[2]!.replace(/^\[|\]$/g, ''), port: Number(m[3]) });
  }
  return out;
}

/** A net.connect lookup that refuses names resolving to non-public addresses. */
export const guardedLookup: LookupFunction = (hostname, options, cb) => {
  const family = typeof options.family === 'number' ? options.family : 0;
  dnsLookup(hostname, { all: true, family }, (err, addrs: LookupAddress[]) => {
    if (err) return cb(err, []);
    const bad = addrs.find((a) => isBlockedAddress(a.address));
    if (bad || addrs.length === 0)
      return cb(new BlockedAddressError(`${hostname} resolves to a non-public address`), []);
    if (options.all) return cb(null, addrs);
    const a = addrs[0]!;
    cb(null, a.address, a.family);
  });
};

export interface UpstreamOptions {
  resolve: Map<string, Override>;
  caFile: string;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  connections?: number;
}

export function createAgent(o: UpstreamOptions): Agent {
  // One secure context for every connection: passing `ca` to each tls.connect would parse the
  // whole root store per handshake (it dominated CPU under load).
  const ca = o.caFile ? [...rootCertificates, readFileSync(o.caFile, 'utf8')] : undefined;
  const tls = ca ? { secureContext: createSecureContext({ ca }) } : {};
  const base = buildConnector({ timeout: o.connectTimeoutMs, ...tls });
  const guarded = buildConnector({ timeout: o.connectTimeoutMs, lookup: guardedLookup, ...tls });
  return new Agent({
    keepAliveTimeout: 10_000,
    connections: o.connections ?? 128,
    headersTimeout: o.headersTimeoutMs,
    bodyTimeout: o.bodyTimeoutMs,
    connect(opts, cb) {
      const ov = o.resolve.get(opts.hostname.toLowerCase());
      if (!ov) return guarded(opts, cb);
      // An override may point at loopback (fixtures, a local mirror) but nowhere else non-public.
      if (isBlockedAddress(ov.address) && !isLoopback(ov.address)) {
        cb(new BlockedAddressError(`${opts.hostname} is overridden to a non-public address`), null);
        return;
      }
      return base({ ...opts, hostname: ov.address, port: String(ov.port), servername: opts.hostname }, cb);
    },
  });
}
