// HTTP/1.1 pipelining with bounded memory per connection. Node parses every request a client
// pipelines and starts its handler at once, while the answers must leave in order: a queued answer
// then reads its body (a file, an upstream) into memory it cannot send yet (a client pipelining
// 1000 downloads without reading held ~1 GB and 1000 open files), and on Node 20 an answer still
// queued when the client leaves never hears of it, so its file or upstream request stays until a
// garbage collection. Here:
// - a request queued behind another answer on its connection waits for its turn (Node gives the
//   answer the socket) before any later hook or handler runs: nothing is read before it can be sent;
// - at most `maxDepth` requests per connection wait read ahead; past that the connection is not
//   read (TCP backpressure) until answers are done;
// - requests still queued when the connection closes end there, without running.
import type { Socket } from 'node:net';
import type { onRequestHookHandler } from 'fastify';

interface Conn {
  /** Requests read on this connection and waiting behind the answer in progress, each with what
   * ends it when the connection closes. */
  waiting: Set<() => void>;
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
 * request): holds a pipelined request until it is its turn, and caps the read-ahead at `maxDepth`
 * requests waiting per connection. A request that owns its connection (all but pipelined ones)
 * costs one property check.
 */
export function pipelineGate(maxDepth: number): onRequestHookHandler {
  return (req, reply, done) => {
    const res = reply.raw;
    // The answer owns the connection (Node assigns it the socket): this request's turn.
    if (res.socket) return done();
    const socket = req.raw.socket as ServerSocket;
    let conn = conns.get(socket);
    if (!conn) {
      const c: Conn = { waiting: new Set(), paused: false };
      conns.set(socket, c);
      // One listener per connection, whatever is queued on it.
      socket.once('close', () => {
        for (const gone of c.waiting) gone();
        c.waiting.clear();
      });
      conn = c;
    }
    const c = conn;
    const gone = () => {
      res.removeListener('socket', onTurn);
      // Nobody is left to answer: no hook, handler or log line runs for it.
      reply.hijack();
      done();
    };
    const onTurn = () => {
      c.waiting.delete(gone);
      if (c.paused && c.waiting.size < maxDepth) {
        c.paused = false;
        resumeReading(socket);
      }
      done();
    };
    c.waiting.add(gone);
    res.once('socket', onTurn);
    if (c.waiting.size >= maxDepth && !c.paused && !socket.destroyed) {
      c.paused = true;
      stopReading(socket);
    }
  };
}
