// What every proxied exchange gets, whatever answers it (the host-path form or an ecosystem such as
// the container registries): the client's byte budget checked first, a per-client concurrency
// share, the usage subjects for the dashboard, one log line per exchange (the path only, never the
// query: signed URLs carry secrets there), upstream aborted when the client leaves, and the body
// sent with its bytes charged to the budget as they flow.
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { readSmall } from '../../infra/egress/capped-body.ts';
import { RequestAbort } from '../../infra/egress/client.ts';
import {
  AppError,
  alreadyLogged,
  answerAs,
  forbidden,
  tooMany,
  unavailable,
} from '../../infra/http/errors.ts';
import type { ByteBudget } from '../../infra/limits/byte-budget.ts';
import { type Subjects, socketBytes } from '../../infra/observe/usage/usage.ts';
import { FileRangeStream } from '../../infra/storage/file-read.ts';
import { classify, codeOf } from './errors.ts';
import type { LaneHit, Upstream } from './forward.ts';
import { SAFETY_HEADERS } from './headers.ts';
import { meter, SMALL_BODY } from './meter.ts';

export interface GateDeps {
  /** Per-client and total bytes sent to clients (config clientBytes, totalBytes). */
  budget: ByteBudget;
  clientAllowed: (ip: string) => boolean;
}

/** One exchange in flight: the abort handle for its upstream and what its log line reports. */
export interface Exchange {
  readonly ip: string;
  /** Fires when the client leaves before the answer is complete (pass it to upstream requests). */
  readonly signal: RequestAbort;
  /** The upstream's status, for the log line. */
  upstreamStatus: number;
  /** Records an upstream failure for the log line (reported once, there). */
  failed(err: unknown): void;
}

/** The limits shared by every proxied route: one instance per proxy plugin. */
export class ProxyGate {
  /** onRequest hooks for every proxied route: only the checks that are on (a hook costs a tick). */
  readonly onRequest: (onRequestHookHandler | onRequestAsyncHookHandler)[] = [];
  private readonly active = new Map<string, number>();
  private readonly ctx: ServiceContext;
  private readonly deps: GateDeps;

  constructor(ctx: ServiceContext, deps: GateDeps) {
    this.ctx = ctx;
    this.deps = deps;
    const cfg = ctx.config.proxy;
    if (cfg.clients.length)
      this.onRequest.push((req, _reply, done) =>
        done(
          deps.clientAllowed(req.clientIp) ? undefined : forbidden('this proxy is not open to your address'),
        ),
      );
    if (cfg.rateLimit.limit > 0) this.onRequest.push(ctx.limiter.hook('proxy', cfg.rateLimit));
  }

  /** The byte budget while it is on, else null. */
  get budget(): ByteBudget | null {
    return this.deps.budget.enabled ? this.deps.budget : null;
  }

  /**
   * Admits an exchange for `host` + `path` (what its log line names): budget, concurrency share,
   * usage subjects. Throws the 429/503 AppError to answer with when it may not go on.
   */
  async open(
    req: FastifyRequest,
    reply: FastifyReply,
    line: { host: string; path: string },
    subjects?: Subjects,
  ): Promise<Exchange> {
    const ctx = this.ctx;
    const cfg = ctx.config.proxy;
    const ip = req.clientIp;
    const budget = this.budget;
    if (budget) {
      const spent = await budget.check(ip).catch(() => {
        throw unavailable('byte budget unavailable, try again shortly', 5, 'BUDGET_UNAVAILABLE');
      });
      if (!spent.allowed) throw tooMany(budget.reason(spent), spent.retryAfterSec, 'BYTE_BUDGET');
    }
    // For the admin dashboard's top repositories, packages and files (counted when it is on).
    if (ctx.usage && subjects) req.usageSubjects = subjects;
    // By client key (IPv6: its /64), as every other per-client limit: one host's addresses are one client.
    const active = this.active;
    const who = req.clientKey;
    const n = active.get(who) ?? 0;
    if (cfg.maxConcurrent > 0 && n >= cfg.maxConcurrent) throw tooMany('too many concurrent requests', 1);
    active.set(who, n + 1);
    const ac = new RequestAbort();
    const started = performance.now();
    // An upstream failure (before or during the body) is reported once, on the exchange line.
    let failure: { reason: string; code?: string } | undefined;
    const x: Exchange = {
      ip,
      signal: ac,
      upstreamStatus: 0,
      failed(err) {
        failure = { reason: classify(err).message, code: codeOf(err) || undefined };
      },
    };
    reply.raw.once('close', () => {
      const left = (active.get(who) ?? 1) - 1;
      if (left <= 0) active.delete(who);
      else active.set(who, left);
      const finished = reply.raw.writableFinished;
      if (!finished) {
        ac.abort();
        // onResponse runs for finished answers only: a download cut short counts here, bytes and all.
        if (ctx.usage) {
          const b = socketBytes(req.raw.socket);
          ctx.usage.record('proxy', ip, reply.raw.statusCode, b.bytesIn, b.bytesOut, req.usageSubjects);
        }
      }
      const out = {
        host: line.host,
        path: line.path,
        status: reply.raw.statusCode,
        upstreamStatus: x.upstreamStatus,
        bytes: Number(reply.raw.getHeader('content-length') ?? 0) || undefined,
        ms: Math.round(performance.now() - started),
        ip,
        complete: finished,
      };
      if (failure) req.log.warn({ ...out, ...failure }, 'upstream failed');
      else req.log.info(out, 'proxied');
    });
    return x;
  }

  /**
   * The error to answer with for an upstream failure, or null when the client has left (the reply
   * is then destroyed). 5xx failures are recorded on the exchange line and not logged again.
   */
  failure(x: Exchange, reply: FastifyReply, err: unknown): AppError | null {
    const f = classify(err);
    if (f.status === 499 || x.signal.aborted) {
      reply.raw.destroy();
      return null;
    }
    const e = new AppError('UPSTREAM', f.status, f.message, f.headers ? { headers: f.headers } : {});
    if (f.status < 500) return e;
    x.failed(err);
    return alreadyLogged(reply, e);
  }

  /**
   * Reads a small body whole (sent with its headers in one write: no stream plumbing per request,
   * and a failure before its end is still a clean 502/504 rather than a cut answer).
   */
  async settle(up: Upstream): Promise<Buffer | undefined> {
    const len = Number(up.headers['content-length'] ?? Number.NaN);
    // (Cached files keep their own pooled copy into the response.)
    if (up.body && len < SMALL_BODY && !(up.body instanceof FileRangeStream))
      return readSmall(up.body, len, 'upstream response');
    return undefined;
  }

  /**
   * Answers the exchange with what `fetch` gets upstream: settle(), then send(); a failure is
   * answered (or the reply dropped when the client left) as failure() says.
   */
  async relay(x: Exchange, reply: FastifyReply, fetch: () => Promise<Upstream>): Promise<FastifyReply> {
    let up: Upstream;
    let small: Buffer | undefined;
    try {
      up = await fetch();
      x.upstreamStatus = up.status;
      small = await this.settle(up);
    } catch (err) {
      const e = this.failure(x, reply, err);
      if (!e) return reply;
      throw e;
    }
    if (up.lane && up.status === 200) this.remember(reply.request, up.lane);
    return this.send(x, reply, up, small);
  }

  /**
   * Lets the fast lane repeat a cache hit (infra/http/fast-lane.ts) under this gate's checks: the
   * client allow-list, the byte budget as this instance last saw it (else the router asks the
   * store), each repeat's bytes charged to it. The rate limit is charged by the lane itself.
   */
  private remember(req: FastifyRequest, hit: LaneHit): void {
    const o = hit.remember;
    const budget = this.budget;
    const listed = this.ctx.config.proxy.clients.length > 0;
    const allowed = this.deps.clientAllowed;
    this.ctx.lane.remember(req, hit.prepared, {
      ...o,
      admit: (ip, now) => (!listed || allowed(ip)) && (!budget || budget.admitsNow(ip, now)),
      onHit: (status, ip, bytes, now) => {
        o.onHit?.(status, ip, bytes, now);
        budget?.charge(ip, bytes, now);
      },
    });
  }

  /** Sends an upstream answer with the proxy's safety headers, charging its bytes to the budget. */
  async send(x: Exchange, reply: FastifyReply, up: Upstream, small?: Buffer): Promise<FastifyReply> {
    const budget = this.budget;
    const ip = x.ip;
    reply.code(up.status).headers(up.headers).headers(SAFETY_HEADERS);
    if (small) {
      // Charged, not written to the store at once: the budget's batch does that within its
      // interval (a store write per small answer would cost more than the answer), and this
      // instance counts its unwritten charges in its own checks.
      budget?.charge(ip, small.length);
      return reply.send(small);
    }
    if (up.offloaded !== undefined) {
      // nginx sends the body (X-Accel-Redirect): charged now, as what it is about to send.
      if (budget) {
        budget.charge(ip, up.offloaded);
        await budget.flush();
      }
      return reply.send();
    }
    if (up.text !== undefined) {
      if (budget) {
        budget.charge(ip, Buffer.byteLength(up.text));
        await budget.flush();
      }
      return reply.send(up.text);
    }
    if (up.body) {
      up.body.on('error', (err) => {
        const f = classify(err);
        if (f.status === 499) return; // the client left: not an upstream failure
        x.failed(err);
        // Logged on the exchange line; broken before the first byte went out (a bad first chunk
        // size), it is answered as the upstream failure it is, in the proxy's one-line envelope.
        answerAs(reply, alreadyLogged(reply, err), new AppError('UPSTREAM', f.status, f.message));
      });
      meter(reply.raw, budget, ip);
      return reply.send(up.body);
    }
    return reply.send();
  }
}
