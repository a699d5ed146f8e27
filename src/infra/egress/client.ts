// The one outbound HTTP client: every request a utility makes to another host (proxy upstreams,
// image upstream, avatar mirror, diagram sources, Bot API, single sign-on) goes through a dispatcher
// made here. Each carries connect, header and body timeouts, an optional response size cap, the
// operator's outbound proxy (route.ts, tunnel.ts) and, above all, the connect-time address guard
// (docs/protocols/reverse-proxy.md §6): names must resolve to public unicast addresses, or to ranges
// the operator allows (egress.allowCidrs), checked on the addresses actually dialled, so DNS rebinding,
// redirects and IP literals that point inward are refused on every hop. Through a proxy the guard
// checks the target's own addresses (never the proxy's) before the tunnel is asked for. Loopback is
// reached through a `host=address:port` override (curl --resolve), which is how tests reach their
// fixture servers. undici itself (some 100 modules) is loaded on the first outbound request.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { isIP, type LookupFunction } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import type { Dispatcher } from 'undici';
import { tracingActive } from '../observe/tracing.ts';
import { type AddressPolicy, ALLOW_SETTING, addressPolicy, isLoopback, parseResolve } from './netguard.ts';
import { routeFor } from './route.ts';
import { tracedRequest } from './trace.ts';
import { createTunnels } from './tunnel.ts';

/**
 * The target resolves (or is overridden) to an address outbound requests may not reach: a refusal
 * by policy, which names the host, the address and the setting that would allow it.
 */
export class BlockedAddressError extends Error {
  readonly code = 'EGRESS_BLOCKED';
  /** The host the request was for, and the refused address ('' when the name had none). */
  readonly host: string;
  readonly address: string;
  constructor(host: string, address: string, how: 'resolves' | 'overridden' | 'literal') {
    const what =
      how === 'literal'
        ? `${address} is a non-public address`
        : how === 'overridden'
          ? `${host} is overridden to ${address}, a non-public address`
          : address
            ? `${host} resolves to ${address}, a non-public address`
            : `${host} resolves to no address`;
    super(address ? `${what}; ${ALLOW_SETTING} can allow its range` : what);
    this.name = 'BlockedAddressError';
    this.host = host;
    this.address = address;
  }
}

/** The shape of dns.lookup with `all: true` that the guard calls (a test passes a counting one). */
export type AddressLookup = (
  hostname: string,
  options: { all: true; family: number },
  cb: (err: NodeJS.ErrnoException | null, addrs: LookupAddress[]) => void,
) => void;

// Failures that mean "this name does not resolve now" (offline, no such name, resolver down). A
// lookup of an unreachable resolver can take seconds and holds one of libuv's four threadpool
// threads (file I/O shares them), so one failure per name is remembered for a short time and every
// request for that name meanwhile fails at once; lookups of one name in flight are shared.
const NEGATIVE = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'ENODATA', 'ESERVFAIL', 'ETIMEOUT']);
const NEGATIVE_MAX = 1000; // remembered names; the oldest goes first
/** How long a failed name lookup is remembered when the policy does not say (config egress.dnsNegativeTtlMs). */
const NEGATIVE_TTL_MS = 10_000;

export interface GuardedLookupOptions {
  /** Default: node:dns lookup (looked up at call time). */
  lookup?: AddressLookup;
  /** How long a failed lookup is remembered (0 = not at all); default 10 s. */
  negativeTtlMs?: number;
  now?: () => number;
  /** Which addresses are refused (default: every non-public one). */
  policy?: AddressPolicy;
}

type ResolveAll = (
  hostname: string,
  family: number,
  cb: (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void,
) => void;

/** A net.connect lookup that refuses names resolving to any refused address (see above for its cache). */
export function createGuardedLookup(o: GuardedLookupOptions = {}): LookupFunction {
  return guardWith(createResolver(o), o.policy ?? addressPolicy());
}

function createResolver(o: GuardedLookupOptions): ResolveAll {
  const now = o.now ?? Date.now;
  const failed = new Map<string, { until: number; err: NodeJS.ErrnoException }>();
  const inFlight = new Map<string, ((err: NodeJS.ErrnoException | null, addrs: LookupAddress[]) => void)[]>();
  const resolveAll = (
    hostname: string,
    family: number,
    cb: (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void,
  ) => {
    const key = `${family}:${hostname.toLowerCase()}`;
    const known = failed.get(key);
    if (known && known.until > now()) return process.nextTick(cb, copyError(known.err), []);
    if (known) failed.delete(key);
    const waiting = inFlight.get(key);
    if (waiting) return void waiting.push(cb);
    const waiters = [cb];
    inFlight.set(key, waiters);
    (o.lookup ?? (dnsLookup as AddressLookup))(hostname, { all: true, family }, (err, addrs) => {
      inFlight.delete(key);
      const ttl = o.negativeTtlMs ?? NEGATIVE_TTL_MS;
      if (err && ttl > 0 && NEGATIVE.has(String(err.code))) {
        if (failed.size >= NEGATIVE_MAX) failed.delete(failed.keys().next().value as string);
        failed.set(key, { until: now() + ttl, err });
      }
      for (const w of waiters) w(err ? copyError(err) : null, err ? [] : addrs);
    });
  };
  return resolveAll;
}

function guardWith(resolveAll: ResolveAll, policy: AddressPolicy): LookupFunction {
  return (hostname, options, cb) => {
    const family = typeof options.family === 'number' ? options.family : 0;
    resolveAll(hostname, family, (err, addrs) => {
      if (err) return cb(err, []);
      const bad = addrs.find((a) => policy.refuses(a.address));
      if (bad || addrs.length === 0)
        return cb(new BlockedAddressError(hostname, bad?.address ?? '', 'resolves'), []);
      if (options.all) return cb(null, addrs);
      const a = addrs[0]!;
      cb(null, a.address, a.family);
    });
  };
}

/** A fresh error per caller (undici and the routes attach their own fields to what they get). */
function copyError(e: NodeJS.ErrnoException): NodeJS.ErrnoException {
  return Object.assign(new Error(e.message), {
    name: e.name,
    code: e.code,
    errno: e.errno,
    syscall: e.syscall,
    hostname: (e as { hostname?: string }).hostname,
  });
}

// One resolver per negative-cache lifetime for the process: its negative cache and shared lookups
// serve every egress client with that lifetime, whatever ranges each one allows. The lifetime is
// each server's config (two servers in one process may differ), so it is not a process setting.
const sharedResolvers = new Map<number, ResolveAll>();
function sharedResolver(negativeTtlMs = NEGATIVE_TTL_MS): ResolveAll {
  let r = sharedResolvers.get(negativeTtlMs);
  if (!r) {
    r = createResolver({ negativeTtlMs });
    sharedResolvers.set(negativeTtlMs, r);
  }
  return r;
}

/** The process-wide guarded lookup with the default policy (every non-public address refused). */
export const guardedLookup: LookupFunction = guardWith(sharedResolver(), addressPolicy());

/**
 * The egress settings every utility passes on unchanged (config section `egress`): the outbound
 * proxy and what bypasses it, and the reserved or private ranges the operator allows.
 */
export interface EgressPolicy {
  /** Outbound proxy URL for every upstream ('' = direct). */
  readonly proxy: string;
  readonly noProxy: readonly string[];
  readonly allowCidrs: readonly string[];
  /** How long a name that failed to resolve fails at once (0 = look up every time); default 10 s. */
  readonly dnsNegativeTtlMs?: number;
}

export interface EgressOptions {
  /** `host=address:port` overrides (config `egress.resolve`, plus any the utility adds). */
  resolve?: readonly string[];
  /** PEM file of extra CAs trusted for upstream TLS. */
  caFile?: string;
  /** A TLS client certificate presented to every upstream (the relay's own, to a relay pool). */
  clientCert?: { cert: string; key: string };
  /** The default of the three timeouts below (10 s when absent too). */
  timeoutMs?: number;
  connectTimeoutMs?: number;
  /** Time the upstream has to send response headers. */
  headersTimeoutMs?: number;
  /** Longest idle gap in a response body. */
  bodyTimeoutMs?: number;
  /** A response body past this many bytes fails the request (UND_ERR_RES_EXCEEDED_MAX_SIZE). */
  maxResponseBytes?: number;
  /** Keep-alive connections per origin. */
  connections?: number;
  keepAliveTimeoutMs?: number;
  /** The outbound proxy and the allowed ranges (config section `egress`); default: direct, none. */
  policy?: EgressPolicy;
  /**
   * False only for this server's own endpoints on loopback (the relay's status port), never for a
   * target that comes from a request or from an upstream.
   */
  guard?: boolean;
  /** The name lookup behind the guard (tests); default: the process-wide guardedLookup. */
  lookup?: AddressLookup;
}

/** undici, loaded once. The first outbound request pays for it (30-70 ms on Node 26) within its own deadline. */
export function loadUndici(): Promise<typeof import('undici')> {
  return import('undici');
}

/** What the utilities use of an undici dispatcher: promise-style requests, and close. */
export interface Egress {
  request(options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  close(): Promise<void>;
}

/**
 * The outbound client with the policy above; close it with the utility. The CA file is read now,
 * so a bad one still stops start-up; the dispatcher is built on the first request.
 */
export function createEgress(o: EgressOptions): Egress {
  // One secure context for every connection: passing `ca` to each tls.connect would parse the
  // whole root store per handshake (it dominated CPU under load).
  const ca = o.caFile ? [...rootCertificates, readFileSync(o.caFile, 'utf8')] : undefined;
  const tls =
    ca || o.clientCert
      ? { secureContext: createSecureContext({ ...(ca ? { ca } : {}), ...o.clientCert }) }
      : {};
  let made: Promise<Built> | undefined;
  let closed = false;
  const dispatcher = () => (made ??= loadUndici().then((undici) => build(undici, o, tls)));
  return {
    async request(options) {
      if (closed && !made) throw new (await loadUndici()).errors.ClientClosedError();
      const { d } = await dispatcher();
      return tracingActive() ? tracedRequest(d, options) : d.request(options);
    },
    async close() {
      closed = true;
      if (made) await (await made).close();
    },
  };
}

interface Built {
  d: Dispatcher;
  close(): Promise<void>;
}

function build(
  undici: typeof import('undici'),
  o: EgressOptions,
  tls: { secureContext?: SecureContext },
): Built {
  const { Agent, buildConnector } = undici;
  const timeout = o.timeoutMs ?? 10_000;
  const connectTimeout = o.connectTimeoutMs ?? timeout;
  const common = {
    keepAliveTimeout: o.keepAliveTimeoutMs ?? 10_000,
    connections: o.connections ?? 128,
    headersTimeout: o.headersTimeoutMs ?? timeout,
    bodyTimeout: o.bodyTimeoutMs ?? timeout,
    ...(o.maxResponseBytes ? { maxResponseSize: o.maxResponseBytes } : {}),
  };
  const base = buildConnector({ timeout: connectTimeout, ...tls });
  if (o.guard === false) {
    const d = new Agent({ ...common, connect: base });
    return { d, close: () => d.close() };
  }
  const policy = addressPolicy(o.policy?.allowCidrs);
  const ttl = o.policy?.dnsNegativeTtlMs;
  const lookup = guardWith(
    o.lookup
      ? createResolver({ lookup: o.lookup, ...(ttl === undefined ? {} : { negativeTtlMs: ttl }) })
      : sharedResolver(ttl),
    policy,
  );
  const guarded = buildConnector({ timeout: connectTimeout, lookup, ...tls });
  const resolve = parseResolve(o.resolve ?? []);
  const route = routeFor({ proxy: o.policy?.proxy ?? '', noProxy: o.policy?.noProxy ?? [] });
  const tunnels = createTunnels(undici, { timeoutMs: connectTimeout, tls: base });
  const agent = new Agent({
    ...common,
    connect(opts, cb) {
      const host = opts.hostname.toLowerCase();
      const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
      const ov = resolve.get(host);
      const literal = isIP(host) ? host : '';
      const address = ov?.address ?? literal;
      // An override may point at loopback (fixtures, a local mirror); any other refused address is
      // refused before a connection or a tunnel is made.
      if (address && policy.refuses(address) && !(ov && isLoopback(ov.address))) {
        cb(new BlockedAddressError(opts.hostname, address, ov ? 'overridden' : 'literal'), null);
        return;
      }
      const servername = literal ? {} : { servername: opts.hostname };
      // Loopback is this machine's own: never the proxy's to reach.
      const proxy = ov && isLoopback(ov.address) ? null : route(host, port, address || undefined);
      if (proxy) {
        const tunnel = () =>
          tunnels.connect(
            proxy,
            address || opts.hostname,
            { ...opts, ...(ov ? { port: String(ov.port) } : {}), ...servername },
            cb,
          );
        if (address) return tunnel();
        // The target's own addresses, as this machine resolves them, must pass the guard; a name
        // this machine cannot resolve at all is the proxy's to resolve (split DNS behind a proxy).
        return lookup(opts.hostname, { all: true }, (err) => {
          if (err instanceof BlockedAddressError) cb(err, null);
          else tunnel();
        });
      }
      if (ov) return base({ ...opts, hostname: ov.address, port: String(ov.port), ...servername }, cb);
      return guarded(opts, cb);
    },
  });
  return {
    d: agent,
    async close() {
      await agent.close();
      await tunnels.close();
    },
  };
}

/**
 * undici's error code of `err` (UND_ERR_HEADERS_TIMEOUT, ...): undici's error classes compared by
 * code, so code that only classifies failures does not load undici.
 */
export function undiciCode(err: unknown): string | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' && c.startsWith('UND_ERR_') ? c : undefined;
}

/** True when `err` (or its cause) is the guard refusing a target. */
export function isBlocked(err: unknown): boolean {
  return refusal(err) !== null;
}

/** The guard's refusal behind `err` (itself or its cause), whose message names host, address and setting. */
export function refusal(err: unknown): BlockedAddressError | null {
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (err instanceof BlockedAddressError) return err;
  return cause instanceof BlockedAddressError ? cause : null;
}

/**
 * An abort handle for one exchange, passed to undici as `signal` (it takes an EventEmitter as well
 * as an AbortSignal). Cheaper per request than an AbortController and its event-target listener,
 * and undici reports the abort as its own RequestAbortedError.
 */
export class RequestAbort extends EventEmitter {
  aborted = false;
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}
