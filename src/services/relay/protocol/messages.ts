// Relay protocol v1 messages and their XDR codec (docs/protocols/syncthing-relay.md §4-§5): pure, no
// sockets, no timers.
import { ProtocolError, XdrReader, XdrWriter } from './xdr.ts';

export const MAGIC = 0x9e79bc40;
export const HEADER_BYTES = 12;
/** strelaysrv and the clients refuse payloads over 1024 bytes (docs/protocols/syncthing-relay.md §4). */
export const DEFAULT_MAX_PAYLOAD = 1024;
/** Every opaque field of the protocol (IDs, keys, addresses) is at most 32 bytes. */
const OPAQUE_MAX = 32;

export const MessageType = {
  ping: 0,
  pong: 1,
  joinRelayRequest: 2,
  joinSessionRequest: 3,
  response: 4,
  connectRequest: 5,
  sessionInvitation: 6,
  relayFull: 7,
} as const;

export type Message =
  | { type: 'ping' }
  | { type: 'pong' }
  | { type: 'relayFull' }
  | { type: 'joinRelayRequest'; token: string }
  | { type: 'joinSessionRequest'; key: Buffer }
  | { type: 'response'; code: number; message: string }
  | { type: 'connectRequest'; id: Buffer }
  | {
      type: 'sessionInvitation';
      from: Buffer;
      key: Buffer;
      address: Buffer;
      port: number;
      serverSocket: boolean;
    };

/**
 * Response codes with the exact texts strelaysrv sends, plus devutil's byte-budget refusal: Syncthing
 * treats any non-zero code as a failed request and logs code and text, so an operator reading the
 * client's log sees why. 429 is far from upstream's small codes (0-3, 99, 100).
 */
export const Responses = {
  success: { code: 0, message: 'success' },
  notFound: { code: 1, message: 'not found' },
  alreadyConnected: { code: 2, message: 'already connected' },
  wrongToken: { code: 3, message: 'wrong token' },
  unexpectedMessage: { code: 100, message: 'unexpected message' },
  overBudget: { code: 429, message: 'byte budget spent' },
} as const;

export function response(r: { code: number; message: string }): Message {
  return { type: 'response', code: r.code, message: r.message };
}

function encodePayload(m: Message, w: XdrWriter): void {
  switch (m.type) {
    case 'ping':
    case 'pong':
    case 'relayFull':
      return;
    case 'joinRelayRequest':
      w.string(m.token);
      return;
    case 'joinSessionRequest':
      w.opaque(m.key);
      return;
    case 'response':
      w.int32(m.code);
      w.string(m.message);
      return;
    case 'connectRequest':
      w.opaque(m.id);
      return;
    case 'sessionInvitation':
      w.opaque(m.from);
      w.opaque(m.key);
      w.opaque(m.address);
      w.uint32(m.port & 0xffff);
      w.uint32(m.serverSocket ? 1 : 0);
      return;
  }
}

/** One framed message: header + XDR payload. */
export function encode(m: Message): Buffer {
  const w = new XdrWriter();
  encodePayload(m, w);
  const payload = w.toBuffer();
  const out = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  out.writeUInt32BE(MAGIC, 0);
  out.writeInt32BE(MessageType[m.type], 4);
  out.writeInt32BE(payload.length, 8);
  payload.copy(out, HEADER_BYTES);
  return out;
}

/** Decodes a payload of a known type. Lenient like the Go decoder: trailing bytes are ignored. */
export function decodePayload(type: number, payload: Buffer): Message {
  const r = new XdrReader(payload);
  switch (type) {
    case MessageType.ping:
      return { type: 'ping' };
    case MessageType.pong:
      return { type: 'pong' };
    case MessageType.relayFull:
      return { type: 'relayFull' };
    case MessageType.joinRelayRequest:
      // Syncthing <= 1.19 sends an empty payload; newer clients send the token string.
      return { type: 'joinRelayRequest', token: payload.length === 0 ? '' : r.string(payload.length) };
    case MessageType.joinSessionRequest:
      return { type: 'joinSessionRequest', key: r.opaque(OPAQUE_MAX) };
    case MessageType.response:
      return { type: 'response', code: r.int32(), message: r.string(payload.length) };
    case MessageType.connectRequest:
      return { type: 'connectRequest', id: r.opaque(OPAQUE_MAX) };
    case MessageType.sessionInvitation:
      return {
        type: 'sessionInvitation',
        from: r.opaque(OPAQUE_MAX),
        key: r.opaque(OPAQUE_MAX),
        address: r.opaque(OPAQUE_MAX),
        port: r.uint32() & 0xffff,
        serverSocket: (r.uint32() & 0xff) !== 0,
      };
    default:
      throw new ProtocolError(`unknown message type ${type}`);
  }
}

/**
 * Incremental frame reader for a byte stream. `next()` returns a whole message or null when more
 * bytes are needed, and throws ProtocolError on bad magic, a length outside [0, maxPayload] or an
 * undecodable payload. `rest()` hands back unread bytes (session mode: they belong to the pipe).
 */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0);

  private readonly maxPayload: number;
  constructor(maxPayload = DEFAULT_MAX_PAYLOAD) {
    this.maxPayload = maxPayload;
  }

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
  }

  next(): Message | null {
    if (this.buf.length < HEADER_BYTES) {
      // Fail fast on a wrong magic even before the header is complete (malformed clients).
      const n = Math.min(this.buf.length, 4);
      const want = Buffer.from([0x9e, 0x79, 0xbc, 0x40]);
      if (n > 0 && !this.buf.subarray(0, n).equals(want.subarray(0, n))) throw new ProtocolError('bad magic');
      return null;
    }
    if (this.buf.readUInt32BE(0) !== MAGIC) throw new ProtocolError('bad magic');
    const type = this.buf.readInt32BE(4);
    const len = this.buf.readInt32BE(8);
    if (len < 0 || len > this.maxPayload) throw new ProtocolError(`bad payload length ${len}`);
    if (this.buf.length < HEADER_BYTES + len) return null;
    const payload = this.buf.subarray(HEADER_BYTES, HEADER_BYTES + len);
    this.buf = this.buf.subarray(HEADER_BYTES + len);
    return decodePayload(type, payload);
  }

  rest(): Buffer {
    const r = this.buf;
    this.buf = Buffer.alloc(0);
    return r;
  }

  get buffered(): number {
    return this.buf.length;
  }
}
