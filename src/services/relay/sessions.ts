// Session mode (docs/protocols/syncthing-relay.md §7): single-use session keys, pairing of the two
// plain-TCP sockets, then a verbatim byte pipe (pump.ts) with back-pressure, rate limits and idle timeouts.
// Unlike strelaysrv, a socket that sends garbage is closed, and when one side goes away both are closed.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { RateLimits, TokenBucket } from './limits.ts';
import { encode, FrameDecoder, Responses, response } from './protocol/messages.ts';
import { pump } from './pump.ts';

interface Session {
  id: number;
  /** Raw device IDs of the two parties (server side = the joined device that was asked for). */
  devices: [Buffer, Buffer];
  keys: [string, string];
  sockets: [Socket | null, Socket | null];
  /** bytesRead of each socket when it joined (the join request is not proxied data). */
  base: [number, number];
  /** Peer addresses of the two sockets, and the session bytes already reported to onBytes. */
  ips: [string, string];
  reported: number;
  /** Idle tracking: bytes seen at the last sweep and when they last changed. */
  seen: number;
  lastChange: number;
  active: boolean;
  closed: boolean;
  bucket: TokenBucket | null;
  timer: NodeJS.Timeout | null;
}

export interface SessionOptions {
  messageTimeoutMs: number;
  networkTimeoutMs: number;
  maxMessageBytes: number;
  /** Read buffer per session direction (pump.ts). */
  bufferBytes?: number;
  limits: RateLimits;
  logger: Logger;
  onSessionStart?(): void;
  /** Bytes a session carried since the last report; false closes the session (budget spent). */
  onBytes?(ips: readonly [string, string], n: number): boolean;
}

export class SessionTable {
  private pending = new Map<string, { session: Session; side: 0 | 1 }>();
  private sessions = new Set<Session>();
  private nextId = 1;
  activeSessions = 0;
  /** Bytes proxied by sessions that have ended. */
  private closedBytes = 0;
  private readonly sweeper: NodeJS.Timeout;
  /** Session-mode sockets still in their first-message handshake. */
  handshaking = new Set<Socket>();

  private readonly o: SessionOptions;
  constructor(o: SessionOptions) {
    this.o = o;
    // Idle sessions are found by a coarse sweep over byte counters rather than a per-socket timer
    // that every chunk would have to refresh (the pipe's hot path stays free of bookkeeping).
    const every = Math.max(50, Math.min(5000, Math.floor(o.networkTimeoutMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  /** Bytes read from session sockets so far (live sessions included), each direction once. */
  bytesProxied(): number {
    let n = this.closedBytes;
    for (const s of this.sessions) if (s.active) n += this.sessionBytes(s);
    return n;
  }

  private sessionBytes(s: Session): number {
    const [a, b] = s.sockets;
    return (a ? a.bytesRead - s.base[0] : 0) + (b ? b.bytesRead - s.base[1] : 0);
  }

  private sweep(): void {
    const now = Date.now();
    for (const s of this.sessions) {
      if (!s.active) continue;
      this.report(s);
      const [a, b] = s.sockets as [Socket, Socket];
      const n = a.bytesRead + a.bytesWritten + b.bytesRead + b.bytesWritten;
      if (n !== s.seen) {
        s.seen = n;
        s.lastChange = now;
      } else if (now - s.lastChange >= this.o.networkTimeoutMs) {
        this.close(s, 'idle');
      }
    }
  }

  // Byte budgets are charged from this sweep and at close, never per chunk.
  private report(s: Session): void {
    if (!this.o.onBytes) return;
    const n = this.sessionBytes(s) - s.reported;
    if (n <= 0) return;
    s.reported += n;
    if (!this.o.onBytes(s.ips, n) && s.active) this.close(s, 'byte budget spent');
  }

  get pendingKeys(): number {
    return this.pending.size;
  }
  get size(): number {
    return this.sessions.size;
  }

  /** A new session between `requester` (client side) and `target` (server side). */
  create(requester: Buffer, target: Buffer): { clientKey: Buffer; serverKey: Buffer } {
    const serverKey = randomBytes(32);
    const clientKey = randomBytes(32);
    const s: Session = {
      id: this.nextId++,
      devices: [target, requester],
      keys: [serverKey.toString('hex'), clientKey.toString('hex')],
      sockets: [null, null],
      base: [0, 0],
      ips: ['', ''],
      reported: 0,
      seen: 0,
      lastChange: 0,
      active: false,
      closed: false,
      bucket: this.o.limits.sessionBucket(),
      timer: null,
    };
    // Not paired within message-timeout of creation: discard it (strelaysrv does the same).
    s.timer = setTimeout(() => {
      if (!s.active) this.close(s, 'pairing timeout');
    }, this.o.messageTimeoutMs);
    s.timer.unref();
    this.sessions.add(s);
    this.pending.set(s.keys[0], { session: s, side: 0 });
    this.pending.set(s.keys[1], { session: s, side: 1 });
    return { clientKey, serverKey };
  }

  /**
   * Reads the one JoinSessionRequest of a fresh session-mode socket and answers it. The deadline for
   * that message runs from accept (listener.ts); `firstMessage` ends it once the request is whole.
   */
  accept(sock: Socket, firstMessage: () => void): void {
    const dec = new FrameDecoder(this.o.maxMessageBytes);
    this.handshaking.add(sock);
    const fail = (r: { code: number; message: string }) => {
      sock.removeListener('data', onData);
      sock.end(encode(response(r)), () => sock.destroy());
    };
    const onData = (chunk: Buffer) => {
      let msg: ReturnType<FrameDecoder['next']>;
      try {
        dec.push(chunk);
        msg = dec.next();
      } catch (err) {
        this.o.logger.debug({ err: (err as Error).message }, 'relay session socket sent malformed data');
        sock.destroy();
        return;
      }
      if (!msg) return;
      firstMessage();
      if (msg.type !== 'joinSessionRequest') return fail(Responses.unexpectedMessage);
      const entry = this.pending.get(msg.key.toString('hex'));
      if (!entry) return fail(Responses.notFound);
      this.pending.delete(msg.key.toString('hex')); // single use
      const { session, side } = entry;
      if (session.sockets[side] || session.closed) return fail(Responses.alreadyConnected);
      sock.removeListener('data', onData);
      sock.pause();
      const rest = dec.rest();
      if (rest.length) sock.unshift(rest); // bytes after the request already belong to the pipe
      session.base[side] = sock.bytesRead - rest.length;
      session.ips[side] = sock.remoteAddress ?? '';
      this.handshaking.delete(sock);
      sock.write(encode(response(Responses.success)));
      session.sockets[side] = sock;
      sock.on('error', () => this.close(session, 'socket error'));
      sock.on('close', () => this.close(session, 'peer closed'));
      if (session.sockets[0] && session.sockets[1]) this.start(session);
    };
    sock.on('data', onData);
    sock.on('close', () => this.handshaking.delete(sock));
    sock.on('error', () => sock.destroy());
    sock.resume();
  }

  private start(s: Session): void {
    if (s.timer) clearTimeout(s.timer);
    s.active = true;
    s.lastChange = Date.now();
    this.activeSessions++;
    this.o.onSessionStart?.();
    const limits = this.o.limits;
    const limited = s.bucket !== null || limits.global !== null;
    const [a, b] = s.sockets as [Socket, Socket];
    s.sockets = pump(
      a,
      b,
      {
        get closed() {
          return s.closed;
        },
        delay: (n) => (limited ? limits.delay(n, s.bucket) : 0),
        finished: () => this.close(s, 'peer finished'),
        failed: () => this.close(s, 'socket error'),
      },
      this.o.bufferBytes,
    );
  }

  private close(s: Session, why: string): void {
    if (s.closed) return;
    s.closed = true;
    if (s.timer) clearTimeout(s.timer);
    this.pending.delete(s.keys[0]);
    this.pending.delete(s.keys[1]);
    this.sessions.delete(s);
    if (s.active) {
      this.activeSessions--;
      this.closedBytes += this.sessionBytes(s);
      this.report(s);
    }
    for (const sock of s.sockets) sock?.destroy();
    this.o.logger.debug({ session: s.id, why }, 'relay session closed');
  }

  /** Ends every session a device takes part in (its permanent connection went away). */
  closeDevice(id: Buffer): void {
    for (const s of this.sessions) {
      if (s.devices[0].equals(id) || s.devices[1].equals(id)) this.close(s, 'device left');
    }
  }

  /** True when the device has a paired, piping session. */
  hasActive(id: Buffer): boolean {
    for (const s of this.sessions) {
      if (s.active && (s.devices[0].equals(id) || s.devices[1].equals(id))) return true;
    }
    return false;
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const s of this.sessions) this.close(s, 'shutdown');
    for (const sock of this.handshaking) sock.destroy();
  }
}
