// A body the fast lane (fast-lane.ts) sends many times, written with its response head as one
// Buffer: the body is copied once into a frame with room before it, and each answer writes only its
// head (the string Node made in writeHead) into that room and hands Node the head and body as one
// chunk, which the socket writes at once without copying it.
//
// What it replaces: res.end(body) with Node's head pending. A Buffer body is written with a
// writev() of the head string and the Buffer (the stream code's chunk list around it); a latin1
// string body (what the lane sent for bodies up to 4 KiB) is appended to the head string, which V8
// then flattens: a new string of head and body, and a second copy of it to write it out. On a 4 KiB
// proxy hit (Node 26) that flattening took 4-5 % of the process's CPU, its allocations a part of
// the scavenges' 2 %.
//
// How: after writeHead, Node keeps the head in res._header and writes it before the first body
// chunk unless res._headerSent says it went out already. The frame carries the head, so the lane
// sets _headerSent and ends the response with the frame's bytes. A frame is in use while the
// response or its socket holds bytes not written at once (a slow reader; a response still waiting
// for its connection keeps them too): the lane then lets that frame go with the write and makes
// another on the next answer. A runtime without these fields (or a head that is not a plain string)
// is answered with res.end(body) as before.
import type { ServerResponse } from 'node:http';

/** Room for the head before the body: at least this, and a quarter more than the first head's. */
const ROOM = 1024;

type Pending = ServerResponse & { _header?: unknown; _headerSent?: unknown; chunkedEncoding?: unknown };

/**
 * The head writeHead made for `res`, not yet written; null when there is none (or another runtime),
 * or when Node would send the body chunked (no Content-Length): it would frame the head as a chunk.
 */
export function pendingHead(res: ServerResponse): string | null {
  const r = res as Pending;
  const head = r._header;
  return typeof head === 'string' && r._headerSent === false && r.chunkedEncoding === false ? head : null;
}

export class Frame {
  private readonly buf: Buffer;
  private readonly room: number;
  /** The last head's length and the bytes it was sent with (head and body). */
  private lastHead = -1;
  private view: Buffer | null = null;

  /** A frame of `body` with room for heads of `headLength` and more. */
  constructor(body: Buffer, headLength: number) {
    this.room = Math.max(ROOM, Math.ceil(headLength * 1.25));
    this.buf = Buffer.allocUnsafeSlow(this.room + body.length);
    body.copy(this.buf, this.room);
  }

  /** Bytes this frame holds. */
  get size(): number {
    return this.buf.length;
  }

  fits(head: string): boolean {
    return head.length <= this.room;
  }

  /**
   * Ends `res` with `head` (pendingHead(res), which fits) and this body as one chunk. True when the
   * frame may be used again at once; false when the socket keeps it for a write still to go (a slow
   * reader, an earlier answer still going out): the caller lets this frame go.
   */
  send(res: ServerResponse, head: string): boolean {
    const start = this.room - head.length;
    // latin1, as Node writes its head: one byte per character (Node checked the values).
    this.buf.write(head, start, 'latin1');
    if (head.length !== this.lastHead || this.view === null) {
      this.view = this.buf.subarray(start);
      this.lastHead = head.length;
    }
    (res as Pending)._headerSent = true;
    res.end(this.view);
    return res.writableLength === 0;
  }
}
