// The session pipe's copy loop (docs/protocols/syncthing-relay.md §7): each direction reads into one buffer
// of its own through net.Socket's onread and writes the bytes straight to the other socket, so a GiB
// relayed allocates no per-chunk buffers for the garbage collector to chase (the 'data' path allocates 64
// KiB per read).
import { Socket, type SocketConstructorOpts } from 'node:net';

/** One read buffer per direction, two per active session, as strelaysrv's -network-buffer. */
export const PUMP_BUFFER_BYTES = 64 * 1024;

/** What a pump asks of its session: whether it ended, how long to wait after n bytes, the end. */
export interface PumpHost {
  readonly closed: boolean;
  /** ms to hold reads after forwarding n bytes (rate limits); 0 = none. */
  delay(n: number): number;
  /** The source sent its FIN and the sink has flushed it on. */
  finished(): void;
  failed(): void;
}

/** The Node internals adopt() relies on; absent (another runtime, a wrapped socket) = not adoptable. */
interface TcpHandle {
  useUserBuffer(buf: Uint8Array): void;
  readStop(): number;
}
type Adoptable = Socket & { _handle: TcpHandle | null };

/**
 * Moves an accepted TCP socket's handle into a new Socket that reads into `buffer` (Node offers
 * onread only to sockets built from options, not to the ones a server accepts). The old Socket
 * keeps the server's and the connection budget's bookkeeping: it closes when the new one does,
 * and destroying it (listener shutdown) destroys the new one. Returns null, leaving the socket as
 * it was, when its handle is not a plain TCP one or it still has a write in flight.
 */
function adopt(old: Socket, onread: { buffer: Buffer; callback(n: number, buf: Buffer): boolean }) {
  const handle = (old as Adoptable)._handle;
  if (!handle || typeof handle.useUserBuffer !== 'function' || old.writableLength > 0 || old.destroyed)
    return null;
  const early: Buffer[] = [];
  for (let c: Buffer | null = old.read(); c !== null; c = old.read()) early.push(c);
  (old as Adoptable)._handle = null;
  // `handle` and `pauseOnCreate` (the handle stops reading until the pump starts it) are the
  // options net.Server itself builds accepted sockets with; @types/node does not list them.
  const opts = { handle, pauseOnCreate: true, onread, readable: true, writable: true };
  const sock = new Socket(opts as SocketConstructorOpts);
  sock.once('close', () => old.destroy());
  old.once('close', () => sock.destroy());
  return { sock, early };
}

interface Direction {
  src: Socket;
  dst: Socket;
  /** Reads are stopped until the sink has flushed (a write in flight still uses the buffer). */
  flushing: boolean;
  /** Reads are stopped until a rate-limit wait has passed. */
  waiting: boolean;
  /** Write callback: lifts the flushing hold once the sink has nothing left in flight. */
  flushed(): void;
}

function resumeIfFree(d: Direction, host: PumpHost): void {
  if (!d.flushing && !d.waiting && !host.closed) d.src.resume();
}

/** Forwards n bytes: holds further reads while the sink still sends them or a rate limit asks to. */
function forward(d: Direction, host: PumpHost, chunk: Buffer): boolean {
  if (host.closed) return false;
  d.dst.write(chunk, d.flushed);
  const wait = host.delay(chunk.length);
  d.flushing = d.dst.writableLength > 0;
  if (wait > 0) {
    d.waiting = true;
    setTimeout(() => {
      d.waiting = false;
      resumeIfFree(d, host);
    }, wait).unref();
  }
  return !d.flushing && !d.waiting;
}

/**
 * Pipes two paired session sockets both ways. Returns the sockets that now carry the session (new
 * Socket objects over the same handles when they could be adopted; their bytesRead continue the
 * old count). The sockets must be paused with nothing left to write.
 */
export function pump(
  a: Socket,
  b: Socket,
  host: PumpHost,
  bufferBytes = PUMP_BUFFER_BYTES,
): [Socket, Socket] {
  const ends = [a, b];
  const dirs: Direction[] = [];
  const pending: Buffer[][] = [[], []];
  for (const i of [0, 1] as const) {
    const d: Direction = {
      src: ends[i] as Socket,
      dst: ends[1 - i] as Socket,
      flushing: false,
      waiting: false,
      flushed: () => {
        if (d.flushing && d.dst.writableLength === 0) {
          d.flushing = false;
          resumeIfFree(d, host);
        }
      },
    };
    const adopted = adopt(d.src, {
      buffer: Buffer.allocUnsafeSlow(bufferBytes),
      callback: (n, buf) => forward(d, host, n === buf.length ? buf : buf.subarray(0, n)),
    });
    if (adopted) {
      ends[i] = d.src = adopted.sock;
      pending[i] = adopted.early;
    } else {
      // Fallback: Node's own buffers, one per read; the same holds apply.
      d.src.on('data', (chunk: Buffer) => {
        if (!forward(d, host, chunk)) d.src.pause();
      });
    }
    dirs.push(d);
  }
  for (const [i, d] of dirs.entries()) {
    d.dst = ends[1 - i] as Socket;
    d.src.on('error', () => host.failed());
    // Half-close: forward the FIN after what is buffered, then the session ends.
    d.src.on('end', () => d.dst.end(() => host.finished()));
  }
  for (const [i, d] of dirs.entries()) {
    for (const c of pending[i] ?? []) d.dst.write(c, d.flushed);
    d.flushing = d.dst.writableLength > 0;
    resumeIfFree(d, host);
  }
  return ends as [Socket, Socket];
}
