// Drain: what a process does between SIGTERM and closing its listener. /readyz answers 503 at once
// so load balancers stop choosing it, while every request that still arrives is served and answered
// with `Connection: close`, so each connection ends after an answer and never between a request and
// its answer (a proxy cannot safely retry a POST it has sent; it can retry a connection that was
// refused or closed before it sent anything).
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Node's http.Server keeps the answer a socket is serving here (public since Node 0.x, untyped). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

export class Drain {
  /** True from the signal on: new answers carry `Connection: close`, /readyz answers 503. */
  draining = false;
  private readonly sockets = new Set<HttpSocket>();

  /** Follows the server's connections (one Set entry and one close listener per connection). */
  track(server: Server): void {
    server.on('connection', (sock: HttpSocket) => {
      this.sockets.add(sock);
      sock.once('close', () => this.sockets.delete(sock));
    });
  }

  /**
   * Starts draining. Answers already being worked on whose headers are not out yet (an upload still
   * arriving, a render) are switched to `Connection: close` too; the rest get it from the request
   * hook (server.ts). Returns how many in-flight answers were switched.
   */
  begin(): number {
    this.draining = true;
    let switched = 0;
    for (const sock of this.sockets) {
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
    for (const sock of this.sockets) if (sock._httpMessage && !sock._httpMessage.writableFinished) busy++;
    return { open: this.sockets.size, busy };
  }
}
