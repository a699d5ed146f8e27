// Drain: what a process does between SIGTERM and closing its listener. /readyz answers 503 at once
// so load balancers stop choosing it, while every request that still arrives is served and answered
// with `Connection: close`, so each connection ends after an answer and never between a request and
// its answer (a proxy cannot safely retry a POST it has sent; it can retry a connection that was
// refused or closed before it sent anything).
//
// Closing the listener closes the idle connections (Node's closeIdleConnections: those between an
// answer and a next request; one accepted whose first request is on its way counts as busy). Node
// then stops timing out connections that never send a request, so one that is opened and left
// silent (a browser's preconnect) held the close until the shutdown deadline; closeIdle() gives such
// a connection FIRST_REQUEST_GRACE_MS from its accept.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Node's http.Server keeps the answer a socket is serving here (public since Node 0.x, untyped). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

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
  /** Connections that have sent at least one request. */
  private readonly served = new WeakSet<Socket>();
  private nodeCloseIdle: (() => void) | undefined;

  /**
   * Follows the server's connections (one Map entry and one close listener per connection), and
   * adds to what server.close() does to idle ones (closeIdle()).
   */
  track(server: Server): void {
    server.on('connection', (sock: HttpSocket) => {
      this.sockets.set(sock, Date.now());
      sock.once('close', () => this.sockets.delete(sock));
    });
    server.on('request', (req: IncomingMessage) => this.served.add(req.socket));
    // server.close() (and Fastify's close) call this on the instance.
    this.nodeCloseIdle = server.closeIdleConnections.bind(server);
    server.closeIdleConnections = () => void this.closeIdle();
  }

  /**
   * What server.close() does to idle connections: Node's own closing of connections that wait for
   * a next request, and a close for each connection that has sent nothing within
   * firstRequestGraceMs of its accept (now or when that time comes). A connection that sends its
   * request meanwhile is served and closed after its answer (draining). Returns how many connections
   * were closed now.
   */
  closeIdle(now = Date.now()): number {
    this.draining = true;
    const open = [...this.sockets];
    this.nodeCloseIdle?.();
    let closed = 0;
    for (const [sock, acceptedAt] of open) {
      if (sock.destroyed) {
        closed++;
        continue;
      }
      if (this.served.has(sock)) continue;
      const wait = acceptedAt + this.firstRequestGraceMs - now;
      if (wait <= 0) {
        sock.destroy();
        closed++;
        continue;
      }
      const t = setTimeout(() => {
        if (!this.served.has(sock)) sock.destroy();
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
