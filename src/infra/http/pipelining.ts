// HTTP/1.1 pipelining with bounded memory per connection. Node parses every request a client
// pipelines and starts its handler at once, while the answers must leave in order: a queued answer
// then reads its body (a file, an upstream) into memory it cannot send yet (a client pipelining
// 1000 downloads without reading held ~1 GB and 1000 open files), and on Node 20 an answer still
// queued when the client leaves never hears of it, so its file or upstream request stays until a
// garbage collection. Here:
// - a request queued behind another answer on its connection waits for its turn (Node gives the
//   answer the socket) before any later hook or handler runs: nothing is read before it can be sent;
// - at most `maxDepth` requests per connection are read ahead; past that the connection is not read
//   (TCP backpressure) until answers are done;
// - requests still queued when the connection closes end there, without running.
import type { Socket } from 'node:net';
import type { onRequestHookHandler } from 'fastify';

interface Conn {
  /** Requests received on this connection whose answers are not done. */
  pending: number;
  /** Reading stopped here for depth (not by Node's own output backpressure). */
  paused: boolean;
}

const conns = new WeakMap<Socket, Conn>();

type ServerSocket = Socket & {
  /** Node's own flag: the server stopped reading this socket until its output drains. */
  _paused?: boolean;
  /** The socket's libuv handle. Node's HTTP parser reads it directly ("consumed"), so pausing the
   * socket stream does not stop reading: the handle itself must stop. */
  _handle?: { reading?: boolean; readStop(): number; readStart(): number } | null;
  /** Node's HTTP parser for this connection; its pause waits for the chunk it is parsing to end. */
  parser?: { pause(): void; resume(): void } | null;
};

/** Stops reading `s` (kernel buffers fill, TCP pushes back on the client) and parsing what came. */
function stopReading(s: ServerSocket): void {
  const h = s._handle;
  if (h?.reading) {
    h.reading = false;
    h.readStop();
  }
  s.parser?.pause();
}

function resumeReading(s: ServerSocket): void {
  // Node's own pause (output backpressure) stays until Node lifts it.
  if (s._paused === true || s.destroyed) return;
  s.parser?.resume();
  const h = s._handle;
  if (h && !h.reading) {
    h.reading = true;
    h.readStart();
  }
}

/**
 * The first onRequest hook of the server (it must run before anything that does work or counts a
 * request): holds a pipelined request until it is its turn, and caps the read-ahead at `maxDepth`.
 */
export function pipelineGate(maxDepth: number): onRequestHookHandler {
  return (req, reply, done) => {
    const res = reply.raw;
    const socket = req.raw.socket as ServerSocket;
    let conn = conns.get(socket);
    if (!conn) {
      conn = { pending: 0, paused: false };
      conns.set(socket, conn);
    }
    const c = conn;
    c.pending++;
    let counted = true;
    const settle = () => {
      if (!counted) return;
      counted = false;
      c.pending--;
      if (c.paused && c.pending <= maxDepth) {
        c.paused = false;
        resumeReading(socket);
      }
    };
    res.once('close', settle);
    if (c.pending > maxDepth && !c.paused && !socket.destroyed) {
      c.paused = true;
      stopReading(socket);
    }
    // The answer owns the connection (Node assigns it the socket): this request's turn.
    if (res.socket) return done();
    const onTurn = () => {
      socket.removeListener('close', onGone);
      done();
    };
    const onGone = () => {
      res.removeListener('socket', onTurn);
      settle();
      // Nobody is left to answer: no hook, handler or log line runs for it.
      reply.hijack();
      done();
    };
    res.once('socket', onTurn);
    socket.once('close', onGone);
  };
}
