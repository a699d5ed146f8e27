// Request bodies: a total deadline for small ones (JSON, text, diagram source), and a lingering close
// for bodies an early answer left unread. Node's requestTimeout has to allow hour-long uploads, so
// without these a client sending one byte every few seconds holds a JSON route, or a connection
// already answered 429, for an hour. Routes that stream large bodies opt out of the deadline with
// `config: { largeBody: true }` (server.ts attaches it to the other routes that take bodies).
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import { AppError } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** File uploads and proxied bodies: only the server's requestTimeout applies. */
    largeBody?: boolean;
  }
}

function hasBody(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

/** A preParsing hook: a body not complete `ms` after its headers is answered 408 (lingerUnreadBody then cuts the connection). */
export function bodyDeadline(ms: number): preParsingHookHandler {
  return (req, reply, payload, done) => {
    if (ms <= 0 || !hasBody(req.raw)) {
      done(null, payload);
      return;
    }
    // The parser reads through a pass-through that can be failed on its own: destroying the
    // request itself would take the socket down before the 408 could be written.
    const body = new PassThrough();
    body.on('error', () => {}); // the parser, if any, reports it; a route that never reads must not crash
    payload.pipe(body);
    const expire = () => {
      payload.unpipe(body);
      payload.pause();
      body.destroy(new AppError('BODY_TIMEOUT', 408, `request body not received within ${ms / 1000}s`));
    };
    const timer = setTimeout(expire, ms);
    const clear = () => clearTimeout(timer);
    body.once('end', clear);
    body.once('close', clear);
    reply.raw.once('close', clear);
    done(null, body);
  };
}

/**
 * After an error answered before the body was read (429, 403, 408, 413), the rest is drained for
 * `lingerMs`, then the connection is cut. Closing at once would make the kernel reset the
 * connection and could lose the answer; waiting for the body would let it trickle on. Called from
 * server.ts's one onResponse hook.
 */
export function lingerUnreadBody(req: FastifyRequest, reply: FastifyReply, lingerMs: number): void {
  if (reply.statusCode >= 400 && hasBody(req.raw)) {
    // inject()'s stand-in socket has no destroy(); a real one always does.
    const sock = req.raw.socket as { destroy?: () => void } | null;
    const timer = setTimeout(() => sock?.destroy?.(), lingerMs);
    timer.unref();
    req.raw.once('end', () => clearTimeout(timer));
    req.raw.resume();
  }
}
