// The worker's length-prefixed protocol (java/DevutilPlantumlWorker.java): request frames out,
// reply frames in, parsed incrementally from the child's stdout. The worker also sends "fetch"
// frames (a URL the engine wants to read), answered with "fetched" frames.

export type Op = 'render' | 'map' | 'check' | 'language' | 'info' | 'cancel' | 'ping';

export interface WorkerRequest {
  op: Op;
  /** png, svg, txt (Unicode art), atxt, eps, epstext, pdf. */
  format?: string;
  index?: number;
  dark?: boolean;
  source?: string;
}

export interface DiagramError {
  /** 0-based line counted from @startuml, like plantuml-server. */
  line: number;
  message: string;
}

/** A URL the engine read during a render, and a hash of what it got (includes.ts). */
export interface IncludeRecord {
  url: string;
  hash: string;
}

export interface WorkerReply {
  /**
   * The request this answers; 0 for the hello and the end of the warm-up; the fetch id for a
   * fetch frame; the render given up on for an "abandoned" frame; 0 for an idle collection.
   */
  id: number;
  status:
    | 'ok'
    | 'error'
    | 'nodiagram'
    | 'badindex'
    | 'exception'
    | 'fetch'
    | 'abandoned'
    | 'warmed'
    | 'pong'
    | 'idle-gc';
  /** The URL a fetch frame asks for. */
  url?: string;
  /** URLs fetched while this request was in flight (set by worker.ts, not by the JVM). */
  includes?: IncludeRecord[];
  description?: string;
  errors: DiagramError[];
  width?: number;
  height?: number;
  exception?: string;
  /** Where the exception was thrown: the first frames of its innermost cause ("class.method:line < ..."). */
  at?: string;
  /** Out of memory: the bytes this render had allocated when it failed. */
  oom?: number;
  /**
   * The render failed with a LinkageError ("class: message"): the JVM's class state is broken
   * (a class whose initializer failed stays unusable), not the diagram. The pool retires the JVM.
   */
  broken?: string;
  /** The kernel thread id of an abandoned render's thread. */
  tid?: number;
  /** An idle collection: the JVM's committed heap before and after it (bytes). */
  heapBefore?: number;
  heapAfter?: number;
  /** Engine facts (hello and info replies). */
  version?: string;
  compileTime?: number;
  java?: string;
  body: Buffer;
}

export function encodeRequest(r: WorkerRequest, id: number): Buffer {
  const clean = (s: string) => s.replace(/[\t\n]/g, ' ');
  const head = [r.op, clean(r.format ?? 'png'), String(r.index ?? 0), r.dark ? '1' : '0'].join('\t');
  const text = `${head}\n${r.source ?? ''}`;
  // One buffer, the text encoded into it in place (not encoded, then copied behind the prefix).
  const n = Buffer.byteLength(text, 'utf8');
  const frame = Buffer.allocUnsafe(8 + n);
  frame.writeUInt32BE(n + 4, 0);
  frame.writeUInt32BE(id, 4);
  frame.write(text, 8, 'utf8');
  return frame;
}

/** The answer to a fetch frame: the status the engine sees, the content type and the body. */
export function encodeFetched(id: number, status: number, type: string, body: Buffer): Buffer {
  const head = Buffer.from(`fetched\t${status}\t${type.replace(/[\t\n\r]/g, ' ')}\t0\n`, 'utf8');
  const pre = Buffer.alloc(8);
  pre.writeUInt32BE(head.length + body.length + 4, 0);
  pre.writeUInt32BE(id, 4);
  return Buffer.concat([pre, head, body]);
}

const STATUSES = new Set([
  'ok',
  'error',
  'nodiagram',
  'badindex',
  'exception',
  'fetch',
  'abandoned',
  'warmed',
  'pong',
  'idle-gc',
]);

/**
 * A reply body to keep (in the cache): as it is when it is nearly all of the memory it lies in, the
 * usual case (a pipe read of one reply, or the join of one reply's reads); copied when it lies in a
 * larger read that held other replies too (many renders in flight), which it would otherwise keep
 * alive for as long as it is cached.
 */
export function ownBody(body: Buffer): Buffer {
  const extra = body.buffer.byteLength - body.length;
  return extra <= Math.max(1024, body.length >> 3) ? body : Buffer.from(body);
}

/** A reply frame: u32 request id (0 = hello), u32 meta length, meta lines, body. */
export function parseReply(frame: Buffer): WorkerReply {
  const id = frame.readUInt32BE(0);
  const metaLen = frame.readUInt32BE(4);
  const meta = frame.subarray(8, 8 + metaLen).toString('utf8');
  const reply: WorkerReply = { id, status: 'exception', errors: [], body: frame.subarray(8 + metaLen) };
  for (const line of meta.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab === -1) continue;
    const key = line.slice(0, tab);
    const value = line.slice(tab + 1);
    switch (key) {
      case 'status':
        if (STATUSES.has(value)) reply.status = value as WorkerReply['status'];
        break;
      case 'error': {
        // "<line> <message>": the worker flattens tabs in values to spaces.
        const m = /^(-?\d+) (.*)$/.exec(value);
        reply.errors.push({ line: m ? Number(m[1]) : 0, message: m ? m[2]! : value });
        break;
      }
      case 'width':
      case 'height':
      case 'compileTime':
      case 'oom':
      case 'tid':
      case 'heapBefore':
      case 'heapAfter':
        reply[key] = Number(value);
        break;
      case 'description':
      case 'url':
      case 'exception':
      case 'at':
      case 'broken':
      case 'version':
      case 'java':
        reply[key] = value;
        break;
    }
  }
  return reply;
}

/**
 * Splits a byte stream into frames; `push` returns every frame completed by the chunk. The chunks
 * of a frame are joined once, when its last one arrives (not on every chunk: a 4 MiB PNG arrives
 * in 64 KiB pipe reads, and joining each time would copy it 64 times over).
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes the frame at the head needs (length prefix included); 0 until its prefix is here. */
  private need = 0;

  private readonly maxFrame: number;
  constructor(maxFrame: number) {
    this.maxFrame = maxFrame;
  }

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.size += chunk.length;
    const frames: Buffer[] = [];
    for (;;) {
      if (this.size < Math.max(4, this.need)) break;
      let buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      this.chunks = [buf];
      const len = buf.readUInt32BE(0);
      if (len > this.maxFrame) throw new Error(`worker frame too large: ${len}`);
      this.need = 4 + len;
      if (this.size < this.need) break;
      this.need = 0;
      frames.push(buf.subarray(4, 4 + len));
      buf = buf.subarray(4 + len);
      this.chunks = buf.length ? [buf] : [];
      this.size = buf.length;
    }
    return frames;
  }
}
