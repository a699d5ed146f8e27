// A total deadline for small request bodies (JSON, text, diagram source). Node's requestTimeout has
// to allow hour-long uploads, so without this a client sending one byte every few seconds holds a
// JSON route for an hour. Routes that stream large bodies opt out with `config: { largeBody: true }`.
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import type { preParsingHookHandler } from 'fastify';
import { AppError } from '../errors.ts';

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

/** A preParsing hook: a body not complete `ms` after its headers is answered 408 and the connection closed. */
export function bodyDeadline(ms: number): preParsingHookHandler {
  return (req, reply, payload, done) => {
    if (ms <= 0 || req.routeOptions.config.largeBody || !hasBody(req.raw)) {
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
      const err = new AppError('BODY_TIMEOUT', 408, `request body not received within ${ms / 1000}s`, {
        headers: { connection: 'close' }, // the rest of the body is never read
      });
      body.destroy(err);
    };
    const timer = setTimeout(expire, ms);
    const clear = () => clearTimeout(timer);
    body.once('end', clear);
    body.once('close', clear);
    reply.raw.once('close', clear);
    done(null, body);
  };
}
