// The fast lane: GET and HEAD answers that are already bytes (the caller's address, cache hits),
// sent from the server's 'request' handler before Fastify routes the request. For such an answer
// Fastify's path (routing, hooks, the reply object, the limiter's promise) costs several times
// what Node needs to send the bytes. The lane keeps that path's semantics: the route's rate limit
// (charged through limits/rate-limit.ts takeNow), request ids, conditional requests, metrics,
// admin usage, traces and the access log line. Whatever it cannot answer exactly as Fastify would
// (a Range, a request body, a pipelined request waiting its turn, a refusal, a URL it does not
// know) goes on to Fastify unchanged.
//
// Two kinds of answers. Live routes compute theirs from the request (the caller's IP). Remembered
// answers repeat one that Fastify sent: a route answering a cache hit marks its reply
// (remember()), the lane captures the headers Fastify actually sent, after every hook, and answers
// the same URL from them while the route's own validity check holds (fast-lane-memo.ts). An answer
// that took byte ranges (Accept-Ranges: bytes) is repeated as a 206 for a single range too, as
// range.ts decides it; several ranges and a 416 are the router's.
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Rate } from '../config/schema.ts';
import { type Charge, chargeOf, type Decision, type RateLimiter } from '../limits/rate-limit.ts';
import type { HttpStats } from '../observe/http-stats.ts';
import type { Tracing } from '../observe/tracing.ts';
import { type Subjects, socketBytes, type UsageRecorder } from '../observe/usage/usage.ts';
import { addressGroup, type ClientIpOptions, clientIp } from './client-ip.ts';
import type { Drain } from './drain.ts';
import { type Entry, entryOf, MemoTable, partialHead, type RememberOptions } from './fast-lane-memo.ts';
import { Frame, pendingHead } from './framed-body.ts';
import type { PreparedResponse } from './prepared-response.ts';
import { rangeOf } from './range.ts';
import { RawHead } from './raw-head.ts';
import type { RequestIds } from './request-id.ts';

export type { RememberOptions } from './fast-lane-memo.ts';

/** What a live route reads of a request. */
export interface LaneRequest {
  readonly method: 'GET' | 'HEAD';
  /** The URL as Fastify routes it (after host rewriting). */
  readonly url: string;
  /** The query string without its '?' ('' when there is none). */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  /** The caller after the trusted-proxy walk (client-ip.ts). */
  readonly clientIp: string;
}

export interface LiveAnswer {
  /** Flat: name, value, ... (content-length is added). */
  headers: readonly string[];
  body: string;
}

export interface LiveRoute {
  svc: string;
  /** Its Fastify route's URL: the metric and trace label. */
  route: string;
  /** The route's rate limit (the same bucket as its Fastify hook), when it has one. */
  limit?: Charge | null;
  /** The answer, or undefined to leave the request to Fastify. */
  answer(r: LaneRequest): LiveAnswer | undefined;
}

export interface FastLaneOptions {
  limiter: RateLimiter;
  http: HttpStats;
  usage: UsageRecorder | null;
  tracing: Tracing | null;
  drain: Drain;
  logger: Logger;
  ids: RequestIds;
  ip: ClientIpOptions;
  v6Bits: number;
  /** Fastify's rewriteUrl (hosted utilities), when there is one. */
  rewrite: ((host: string | undefined, url: string) => string) | null;
  /** URLs whose answers are remembered at once (default 10 000). */
  capacity?: number;
}

/**
 * What Node's server does itself, with its optimizeEmptyRequests option (Node 26), to a request
 * without a body: marks it read, ended and closed, without the 'end' and 'close' events and the
 * ticks that emit them. The lane does it to a request it answers (a GET or HEAD without a body that
 * nothing else sees), where the events had no listener: about 2% of a hit's CPU (profiles of the
 * hit rows). A runtime without these methods leaves the request as it is.
 */
type Settled = IncomingMessage & { _dumpAndCloseReadable?: () => void; _read: (n: number) => void };
function settle(req: IncomingMessage): void {
  const r = req as Settled;
  if (r._dumpAndCloseReadable === undefined) return;
  r._dumpAndCloseReadable();
  // As Node follows it: marks the request consumed (no dump after the answer) and keeps the
  // connection reading the next request.
  r._read(0);
}

/**
 * Bodies up to this size are sent from a frame (framed-body.ts): the head and the body in one
 * Buffer, one write. Larger ones go as they are (a writev of the head and the body): the writev's
 * cost is small beside theirs, and a frame would hold a second copy of each.
 */
const FRAME_MAX = 16 * 1024;
/** Bytes of frames made before the lane lets them all go and starts again. */
const FRAME_BUDGET = 4 * 1024 * 1024;

const kRemember = Symbol('fast-lane remember');
const kPeer = Symbol('fast-lane peer');
type Marked = FastifyRequest & { [kRemember]?: { prepared: PreparedResponse; o: RememberOptions } };

export class FastLane {
  private readonly live = new Map<string, LiveRoute>();
  private readonly memo: MemoTable;
  private readonly o: FastLaneOptions;
  private readonly info: boolean;
  /** Expires values by max-age, made once a second. */
  private expiresAt = 0;
  private readonly expiresText = new Map<number, string>();
  private lastMaxAge = -1;
  private lastExpires = '';
  /** lines()' Expires line, rendered, and the value it renders. */
  private lastLine = '';
  private lastLineOf = '';
  private warned = false;
  /** Live answers' prepared heads, by the header array a route answers with (its constants). */
  private readonly liveHeads = new WeakMap<readonly string[], RawHead | null>();
  private installed = false;
  /** The server's idle timeout, armed by the lane (install()); 0 when there is none. */
  private idleMs = 0;
  /**
   * Frames of bodies, by the prepared answer they belong to: each lives while its cache keeps the
   * body, and all go when they add up to FRAME_BUDGET (the map is replaced).
   */
  private frames = new WeakMap<PreparedResponse, Frame>();
  private frameBytes = 0;
  /** Answers the lane sent itself (status pages, tests). */
  answered = 0;

  constructor(o: FastLaneOptions) {
    this.o = o;
    this.memo = new MemoTable(o.capacity ?? 10_000);
    this.info = o.logger.isLevelEnabled('info');
  }

  /**
   * Puts the lane in front of the server's request listeners (Fastify's), before tracing wraps them.
   *
   * It also takes over the server's idle timeout (server.timeout), which Node re-arms on a
   * keep-alive connection for every request before any listener sees it, replacing the keep-alive
   * timer, which it arms again once the answer is out: two timer moves per answer where a server
   * without an idle timeout makes one (a bare node:http server spent 1-3 % more CPU per answer with
   * one; 0.1-0.4 us of a proxy hit in profiles). A lane answer is mostly out within the same turn,
   * and the idle timer is never looked at in between. So Node is told of no idle timeout, and the
   * lane arms it where Node would have counted on it: on a new connection (as Node does), for every
   * request the router answers, and after a lane answer whose bytes did not all go out at once (a
   * slow reader).
   */
  install(server: Server): void {
    const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
    server.removeAllListeners('request');
    this.installed = true;
    const idle = server.timeout;
    if (idle > 0) {
      this.idleMs = idle;
      server.timeout = 0;
      server.on('connection', (sock: Socket) => sock.setTimeout(idle));
    }
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (this.serve(req, res)) return;
      const sock = req.socket;
      // Node set the connection's timer to none (0) for this request, after a keep-alive wait.
      if (idle > 0 && sock.timeout !== idle) sock.setTimeout(idle);
      for (const l of listeners) l.call(server, req, res);
    });
  }

  /** Answers GET and HEAD of `path` (exact, without a query) with `route` when it can. */
  route(path: string, route: LiveRoute): void {
    this.live.set(path, route);
    if (route.limit) this.o.limiter.laneCharges(route.limit.bucket);
  }

  /**
   * Marks the answer a Fastify route is sending (a cache hit's prepared 200) as one the lane may
   * repeat for the same URL. Captured in the server's onResponse hook if it went out as a 200.
   */
  remember(req: FastifyRequest, prepared: PreparedResponse, o: RememberOptions = {}): void {
    (req as Marked)[kRemember] = { prepared, o };
  }

  /** From the server's onResponse hook: keeps a marked answer that went out whole. */
  capture(req: FastifyRequest, reply: FastifyReply, svc: string, route: string | undefined): void {
    const mark = (req as Marked)[kRemember];
    if (!mark || route === undefined || !this.installed) return;
    if (req.method !== 'GET' || reply.statusCode !== 200 || req.headers.range !== undefined) return;
    const now = Date.now();
    if (mark.o.until !== undefined && now >= mark.o.until) return;
    const charge = chargeOf(req) ?? null;
    const entry = entryOf({
      svc,
      route,
      prepared: mark.prepared,
      sent: reply.getHeaders(),
      request: req.headers,
      charge,
      subjects: req.usageSubjects,
      o: mark.o,
      now,
    });
    if (!entry) return;
    if (charge) this.o.limiter.laneCharges(charge.bucket);
    this.memo.set(req.raw.url ?? req.url, entry);
  }

  /** Forgets every remembered answer (a utility's source changed wholesale). */
  forgetAll(): void {
    this.memo.clear();
  }

  /** Remembered URLs (status pages, tests). */
  get remembered(): number {
    return this.memo.size;
  }

  /** Answers the request if it can (true); false leaves it to Fastify, untouched. */
  serve(req: IncomingMessage, res: ServerResponse): boolean {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') return false;
    // A pipelined request waiting behind another answer: Fastify's gate holds it (pipelining.ts).
    if (!res.socket) return false;
    const h = req.headers;
    // A body on a GET is read and discarded by Fastify; the lane reads none.
    if (h['transfer-encoding'] !== undefined || (h['content-length'] ?? '0') !== '0') return false;
    try {
      const raw = req.url ?? '/';
      const url = this.o.rewrite ? this.o.rewrite(h.host, raw) : raw;
      const e = this.memo.find(url, h);
      if (e) return this.repeat(req, res, method, url, e);
      const q = url.indexOf('?');
      const live = this.live.get(q === -1 ? url : url.slice(0, q));
      return live ? this.answerLive(req, res, method, url, q, live) : false;
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return true;
      }
      if (!this.warned) this.o.logger.error({ err }, 'fast lane failed; answering through the router');
      this.warned = true;
      return false;
    }
  }

  private answerLive(
    req: IncomingMessage,
    res: ServerResponse,
    method: 'GET' | 'HEAD',
    url: string,
    q: number,
    route: LiveRoute,
  ): boolean {
    const started = performance.now();
    const h = req.headers;
    const ip = this.callerOf(req);
    const a = route.answer({
      method,
      url,
      query: q === -1 ? '' : url.slice(q + 1),
      headers: h,
      clientIp: ip,
    });
    if (!a) return false;
    const limit = route.limit;
    let d: Decision | null = null;
    let rate: Rate | null = null;
    if (limit) {
      rate = typeof limit.rate === 'function' ? limit.rate() : limit.rate;
      d = this.o.limiter.takeNow(limit.bucket, addressGroup(ip, this.o.v6Bits), rate);
      if (!d) return false;
    }
    const id = this.o.ids(h['x-request-id']);
    const size = Buffer.byteLength(a.body);
    const raw = this.o.drain.draining ? null : this.liveHead(a.headers);
    if (!raw?.write(res, 200, id, this.lines(d, rate, null, 0), String(size))) {
      const out = this.headers(id, d, rate, null, 0);
      out.push('x-content-type-options', 'nosniff');
      for (let i = 0; i < a.headers.length; i++) out.push(a.headers[i]!);
      out.push('content-length', String(size));
      res.writeHead(200, out);
    }
    settle(req);
    if (method === 'HEAD') res.end();
    else res.end(a.body);
    this.unsent(res);
    this.done(req, res, url, id, route.svc, route.route, 200, ip, started, null, size);
    return true;
  }

  private repeat(req: IncomingMessage, res: ServerResponse, method: string, url: string, e: Entry): boolean {
    const started = performance.now();
    const h = req.headers;
    if ((h.range !== undefined && !e.ranges) || h.authorization !== undefined) return false;
    const o = e.o;
    const prepared = e.ref.deref();
    const pre = prepared?.precondition({ method, headers: h });
    // A 412's headers are the route's own choice: Fastify answers it.
    if (pre === 'failed') return false;
    // A 206 sends a body, as a 200 does (valid() asks whether the body may be sent).
    const sends = pre === 'not-modified' ? 304 : 200;
    // One clock read per answer, handed to every check, charge and Expires below (Date.now() is a
    // call into the runtime: several per answer showed in profiles of the hit rows); none when
    // nothing here asks for the time.
    const now = o.until !== undefined || o.admit || o.onHit || e.expiresIn !== null ? Date.now() : 0;
    if (!prepared || (o.until !== undefined && now >= o.until) || (o.valid && !o.valid(sends))) {
      this.memo.drop(url, e);
      return false;
    }
    if (o.accepts && !o.accepts(h)) return false;
    const size = prepared.body.length;
    const range = pre === 'pass' && e.ranges ? rangeOf(method, h, prepared.validators, size) : null;
    if (range && range.kind !== 'whole' && range.kind !== 'single') return false;
    const ip = this.callerOf(req);
    if (o.admit && !o.admit(ip, now)) return false;
    let d: Decision | null = null;
    let rate: Rate | null = null;
    if (e.charge) {
      rate = typeof e.charge.rate === 'function' ? e.charge.rate() : e.charge.rate;
      d = this.o.limiter.takeNow(e.charge.bucket, addressGroup(ip, this.o.v6Bits), rate);
      if (!d) return false;
    }
    const id = this.o.ids(h['x-request-id']);
    const part = range?.kind === 'single' ? range : null;
    const status = pre === 'not-modified' ? 304 : part ? 206 : 200;
    const raw = part || this.o.drain.draining ? null : this.entryHead(e, status === 304);
    if (raw?.write(res, status, id, this.lines(d, rate, e.expiresIn, now))) {
      // written from the prepared head
    } else if (d === null && !part && !this.o.drain.draining)
      res.writeHead(status, this.reused(e, status === 304, id, now));
    else {
      const out = this.headers(id, d, rate, e.expiresIn, now);
      const fixed =
        status === 304 ? e.notModified : part ? partialHead(e.head, part.start, part.end, size) : e.head;
      for (let i = 0; i < fixed.length; i++) out.push(fixed[i]!);
      res.writeHead(status, out);
    }
    const body = part ? prepared.body.subarray(part.start, part.end + 1) : prepared.body;
    const bytes = status === 304 || method === 'HEAD' ? 0 : body.length;
    settle(req);
    if (!bytes) res.end();
    else if (part || bytes > FRAME_MAX || !this.framed(res, prepared)) res.end(body);
    this.unsent(res);
    o.onHit?.(status, ip, bytes, now);
    this.done(
      req,
      res,
      url,
      id,
      e.svc,
      e.route,
      status,
      ip,
      started,
      e.subjects,
      status === 304 ? null : body.length,
    );
    return true;
  }

  /** An answer with bytes still to go out waits for its reader under the idle timeout (install()). */
  private unsent(res: ServerResponse): void {
    const sock = res.socket;
    if (this.idleMs > 0 && sock && sock.writableLength > 0) sock.setTimeout(this.idleMs);
  }

  /**
   * The caller (client-ip.ts). Without trusted proxies it is the socket's peer, the same for every
   * request on the connection: worked out once per connection.
   */
  private callerOf(req: IncomingMessage): string {
    if (this.o.ip.trusted !== null) return clientIp(req.socket.remoteAddress, req.headers, this.o.ip);
    const sock = req.socket as Socket & { [kPeer]?: string };
    let ip = sock[kPeer];
    if (ip === undefined) {
      ip = clientIp(sock.remoteAddress, req.headers, this.o.ip);
      sock[kPeer] = ip;
    }
    return ip;
  }

  /** Ends `res` with the whole body of `prepared` from its frame (framed-body.ts); false when it cannot. */
  private framed(res: ServerResponse, prepared: PreparedResponse): boolean {
    const head = pendingHead(res);
    if (head === null) return false;
    let f = this.frames.get(prepared);
    if (f === undefined || !f.fits(head)) {
      f = new Frame(prepared.body, head.length);
      if (this.frameBytes + f.size > FRAME_BUDGET) {
        this.frames = new WeakMap();
        this.frameBytes = 0;
      }
      this.frames.set(prepared, f);
      this.frameBytes += f.size;
    }
    if (!f.send(res, head)) this.frames.delete(prepared);
    return true;
  }

  /** The entry's prepared head for a 200 or a 304 (raw-head.ts), made on its first use. */
  private entryHead(e: Entry, notModified: boolean): RawHead | null {
    if (notModified) {
      if (e.raw304 === undefined) e.raw304 = RawHead.of(e.notModified);
      return e.raw304;
    }
    if (e.raw200 === undefined) e.raw200 = RawHead.of(e.head);
    return e.raw200;
  }

  /** A live route's prepared head for the header array it answered with. */
  private liveHead(headers: readonly string[]): RawHead | null {
    let raw = this.liveHeads.get(headers);
    if (raw === undefined) {
      raw = RawHead.of(['x-content-type-options', 'nosniff', ...headers]);
      this.liveHeads.set(headers, raw);
    }
    return raw;
  }

  /** headers() after the request id, rendered as RawHead.write takes them (numbers and a date only). */
  private lines(d: Decision | null, rate: Rate | null, expiresIn: number | null, now: number): string {
    let s = '';
    if (d && rate)
      s = `\r\nratelimit-limit: ${d.limit}\r\nratelimit-remaining: ${d.remaining}\r\nratelimit-reset: ${d.resetSec}\r\nratelimit-policy: ${d.limit};w=${Math.ceil(rate.windowMs / 1000)}`;
    if (expiresIn === null) return s;
    // The rendered line is kept with the value (one per second): no string made per answer.
    const t = this.expires(expiresIn, now);
    if (t !== this.lastLineOf) {
      this.lastLineOf = t;
      this.lastLine = `\r\nexpires: ${t}`;
    }
    return s === '' ? this.lastLine : s + this.lastLine;
  }

  /**
   * headers() and the entry's own for a 200 or 304 that has no rate-limit headers: one array per
   * entry, reused (writeHead has read it when it returns), the per-request values written in.
   */
  private reused(e: Entry, notModified: boolean, id: string, now: number): string[] {
    let t = notModified ? e.sent304 : e.sent200;
    if (!t) {
      const expires = e.expiresIn !== null ? ['expires', ''] : [];
      t = ['x-request-id', '', ...expires, ...(notModified ? e.notModified : e.head)];
      if (notModified) e.sent304 = t;
      else e.sent200 = t;
    }
    t[1] = id;
    if (e.expiresIn !== null) t[3] = this.expires(e.expiresIn, now);
    return t;
  }

  /** The headers made per request, first (as Fastify's hooks set them first). */
  private headers(
    id: string,
    d: Decision | null,
    rate: Rate | null,
    expiresIn: number | null,
    now: number,
  ): string[] {
    const out = ['x-request-id', id];
    if (this.o.drain.draining) out.push('connection', 'close');
    if (d && rate)
      out.push(
        'ratelimit-limit',
        String(d.limit),
        'ratelimit-remaining',
        String(d.remaining),
        'ratelimit-reset',
        String(d.resetSec),
        'ratelimit-policy',
        `${d.limit};w=${Math.ceil(rate.windowMs / 1000)}`,
      );
    if (expiresIn !== null) out.push('expires', this.expires(expiresIn, now));
    return out;
  }

  /** Expires `maxAge` seconds from `nowMs`, formatted once a second. */
  private expires(maxAge: number, nowMs: number): string {
    const now = Math.floor(nowMs / 1000);
    if (now !== this.expiresAt) {
      this.expiresAt = now;
      this.expiresText.clear();
      this.lastMaxAge = -1;
    }
    // Most answers share one max-age: that one is answered without the map.
    if (maxAge === this.lastMaxAge) return this.lastExpires;
    let t = this.expiresText.get(maxAge);
    if (t === undefined) {
      t = new Date((now + maxAge) * 1000).toUTCString();
      this.expiresText.set(maxAge, t);
    }
    this.lastMaxAge = maxAge;
    this.lastExpires = t;
    return t;
  }

  /** What Fastify's onResponse hook and log controller do for an answer. */
  private done(
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    reqId: string,
    svc: string,
    route: string,
    status: number,
    ip: string,
    started: number,
    subjects: Subjects | null,
    size: number | null,
  ): void {
    this.answered++;
    const ms = performance.now() - started;
    this.o.http.record(svc, route, req.method ?? 'GET', status, ms / 1000);
    this.o.tracing?.routed(req, { route, clientIp: ip, svc });
    const usage = this.o.usage;
    if (usage) {
      const b = socketBytes(req.socket);
      usage.record(svc, ip, status, b.bytesIn, b.bytesOut, subjects);
    }
    if (!this.info) return;
    // The access log line Fastify writes (errors.ts OnceLogController), once the answer is out.
    const line = {
      reqId,
      svc,
      req: { method: req.method, url, headers: { host: req.headers.host }, clientIp: ip },
      // What the res serializer reads of a reply: its status and Content-Length (the size).
      res: {
        statusCode: status,
        getHeader: (name: string) => (name === 'content-length' && size !== null ? size : undefined),
      },
      responseTime: ms,
    };
    let finished = false;
    res.once('finish', () => {
      finished = true;
      this.o.logger.info(line, 'request completed');
    });
    res.once('close', () => {
      if (!finished) this.o.logger.info(line, 'request aborted');
    });
  }
}
