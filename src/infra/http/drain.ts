// Drain: what a process does between SIGTERM and closing its listener. /readyz answers 503 at once
// so load balancers stop choosing it, while every request that still arrives is served and answered
// with `Connection: close`, so each connection ends after an answer and never between a request and
// its answer (a proxy cannot safely retry a POST it has sent; it can retry a connection that was
// refused or closed before it sent anything).
//
// Closing the listener also closes the idle connections, and Node's own idea of idle differs by
// version: Node 26 counts a connection accepted a moment ago, whose first request is on its way, as
// idle and cuts it (the client, nginx here, reads a reset where the answer should be: a 502 for a
// POST it cannot send again), while Node 20 keeps it and, once the server has closed, no longer
// times out one that never sends anything (a browser's preconnect then held the stop until the
// shutdown deadline). closeIdle() replaces both: a connection between an answer and a next request
// is closed at once, one that has not sent a request gets FIRST_REQUEST_GRACE_MS from its accept.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

const kServed = Symbol('drain: served');

/** Node's http.Server keeps the answer a socket is serving here (public since Node 0.x, untyped). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null; [kServed]?: true };

/**
 * How long after its accept a connection that has sent no request yet is kept once the server
 * closes. A request accepted just before the close is read within a turn or two of the event loop;
 * a client that opened a connection and sends nothing (a browser's preconnect) is closed after it.
 */
export const FIRST_REQUEST_GRACE_MS = 2000;

export class Drain {
  /** True from the signal on: new answers carry `Connection: close`, /readyz answers 503. */
  draining = false;
  /** FIRST_REQUEST_GRACE_MS (tests set their own). */
  firstRequestGraceMs = FIRST_REQUEST_GRACE_MS;
  /** Open connections and when each was accepted (ms). */
  private readonly sockets = new Map<HttpSocket, number>();
  /**
   * Follows the server's connections (one Map entry and one close listener per connection), and
   * takes over what server.close() does to idle ones (closeIdle()). A connection that has sent a
   * request is marked on its socket by the server's one request listener, which this wraps around
   * those already there: an emitter with two listeners copies its listener array on every emit.
   */
  track(server: Server): void {
    server.on('connection', (sock: HttpSocket) => {
      this.sockets.set(sock, Date.now());
      sock.once('close', () => this.sockets.delete(sock));
    });
    const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      (req.socket as HttpSocket)[kServed] = true;
      for (let i = 0; i < listeners.length; i++) listeners[i]!.call(server, req, res);
    });
    // server.close() (and Fastify's close) call this on the instance.
    server.closeIdleConnections = () => void this.closeIdle();
  }

  /**
   * What server.close() does to idle connections, in place of Node's own: a connection that waits
   * for a next request after an answer is closed now; one that has sent nothing yet is closed once
   * firstRequestGraceMs have passed since its accept, unless its request arrives meanwhile (it is
   * then served and closed after its answer, since the server is draining). A connection whose
   * answer is not finished is left to finish. Returns how many connections were closed now.
   */
  closeIdle(now = Date.now()): number {
    this.draining = true;
    let closed = 0;
    for (const [sock, acceptedAt] of this.sockets) {
      const res = sock._httpMessage;
      if (res && !res.writableFinished) continue; // busy: it closes after its answer
      const wait = sock[kServed] ? 0 : acceptedAt + this.firstRequestGraceMs - now;
      if (wait <= 0) {
        sock.destroy();
        closed++;
        continue;
      }
      const t = setTimeout(() => {
        if (!sock[kServed]) sock.destroy();
      }, wait);
      t.unref();
      sock.once('close', () => clearTimeout(t));
    }
    return closed;
  }

  /**
   * Starts draining. Answers already being worked on whose headers are not out yet (an upload still
   * arriving, a render) are switched to `Connection: close` too; the rest get it from the request
   * hook (server.ts). Returns how many in-flight answers were switched.
   */
  begin(): number {
    this.draining = true;
    let switched = 0;
    for (const sock of this.sockets.keys()) {
      const res = sock._httpMessage;
      if (res && !res.headersSent) {
        res.shouldKeepAlive = false;
        switched++;
      }
    }
    return switched;
  }

  /** Open connections, and those with an answer not yet finished (what a deadline would cut). */
  counts(): { open: number; busy: number } {
    let busy = 0;
    for (const sock of this.sockets.keys())
      if (sock._httpMessage && !sock._httpMessage.writableFinished) busy++;
    return { open: this.sockets.size, busy };
  }
}
