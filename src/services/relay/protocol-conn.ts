// Protocol mode (docs/protocols/syncthing-relay.md §6): one TLS connection from a Syncthing client, either
// permanent (joined, receives invitations, answers pings) or temporary (one ConnectRequest, one answer,
// closed).
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { deviceIdOf } from './protocol/device-id.ts';
import { encode, FrameDecoder, type Message, Responses, response } from './protocol/messages.ts';
import type { SessionTable } from './sessions.ts';

/** What a connection needs from the relay that owns it. */
export interface Hub {
  readonly token: string;
  readonly pingIntervalMs: number;
  readonly networkTimeoutMs: number;
  readonly maxMessageBytes: number;
  readonly maxSessions: number;
  readonly invitationAddress: Buffer;
  readonly invitationPort: number;
  readonly joined: Map<string, ProtocolConn>;
  readonly sessions: SessionTable;
  readonly logger: Logger;
  overLimit(): boolean;
  /** True when a byte budget is configured (budgetAllows is then asked before joins and sessions). */
  readonly budgeted: boolean;
  /** Whether these addresses (and the relay as a whole) still have byte budget left. */
  budgetAllows(ips: readonly string[]): Promise<boolean>;
  refused(reason: string): void;
  closed(conn: ProtocolConn): void;
}

/** Sends what is left, then closes; a peer that never closes its side is cut off after 2 s. */
export function finish(sock: Socket, last?: Buffer): void {
  if (last) sock.end(last);
  else sock.end();
  setTimeout(() => sock.destroy(), 2000).unref();
}

export class ProtocolConn {
  readonly id: Buffer;
  readonly hex: string;
  /** The client's address, charged for the sessions it takes part in. */
  readonly ip: string;
  joined = false;
  private readonly dec: FrameDecoder;
  private readonly pingTimer: NodeJS.Timeout;
  private readonly idleTimer: NodeJS.Timeout;
  private done = false;

  private readonly sock: TLSSocket;
  private readonly hub: Hub;
  private firstMessage: (() => void) | null;
  /** `firstMessage` is called when the first whole message arrives (the listener's deadline ends). */
  constructor(sock: TLSSocket, hub: Hub, certDer: Buffer, firstMessage: () => void) {
    this.sock = sock;
    this.hub = hub;
    this.firstMessage = firstMessage;
    this.id = deviceIdOf(certDer);
    this.hex = this.id.toString('hex');
    this.ip = sock.remoteAddress ?? '';
    this.dec = new FrameDecoder(hub.maxMessageBytes);
    this.pingTimer = setInterval(() => this.tick(), hub.pingIntervalMs);
    // Any received message resets the network timeout; silence past it closes the connection.
    this.idleTimer = setTimeout(() => this.close('network timeout'), hub.networkTimeoutMs);
    sock.on('data', (chunk: Buffer) => this.onData(chunk));
    sock.on('error', () => sock.destroy());
    sock.on('close', () => this.cleanup());
  }

  send(m: Message): void {
    if (!this.done) this.sock.write(encode(m));
  }

  /** Sends a last message (optional) and ends the connection. */
  close(why: string, last?: Message): void {
    if (this.done) return;
    this.hub.logger.debug({ why, joined: this.joined }, 'relay connection closing');
    finish(this.sock, last ? encode(last) : undefined);
    this.cleanup();
  }

  private cleanup(): void {
    if (this.done) return;
    this.done = true;
    clearInterval(this.pingTimer);
    clearTimeout(this.idleTimer);
    this.hub.closed(this);
  }

  private tick(): void {
    if (!this.joined) {
      this.close('join deadline');
      return;
    }
    if (this.hub.overLimit() && !this.hub.sessions.hasActive(this.id)) {
      this.hub.refused('full');
      this.close('relay full', { type: 'relayFull' });
      return;
    }
    this.send({ type: 'ping' });
  }

  private onData(chunk: Buffer): void {
    try {
      this.dec.push(chunk);
      for (let m = this.dec.next(); m && !this.done; m = this.dec.next()) {
        this.firstMessage?.();
        this.firstMessage = null;
        this.idleTimer.refresh();
        this.handle(m);
      }
    } catch (err) {
      this.hub.refused('malformed');
      this.hub.logger.debug({ err: (err as Error).message }, 'relay client sent malformed data');
      this.sock.destroy();
      this.cleanup();
    }
  }

  private handle(m: Message): void {
    const hub = this.hub;
    switch (m.type) {
      case 'ping':
        this.send({ type: 'pong' });
        return;
      case 'pong':
        return;
      case 'joinRelayRequest':
        if (hub.token !== '' && m.token !== hub.token) {
          hub.refused('token');
          this.close('wrong token', response(Responses.wrongToken));
          return;
        }
        // Over budget, a join is refused like one over the connection limit
        // (docs/protocols/syncthing-relay.md §8).
        this.whenBudgetAllows([this.ip], { type: 'relayFull' }, () => this.join());
        return;
      case 'connectRequest': {
        const peer = m.id.length === 32 ? hub.joined.get(m.id.toString('hex')) : undefined;
        // Both ends of the new session are charged for it, so both must have budget left.
        if (peer)
          this.whenBudgetAllows([this.ip, peer.ip], response(Responses.overBudget), () => this.connect(m.id));
        else this.connect(m.id);
        return;
      }
      default:
        hub.refused('unexpected');
        this.close('unexpected message', response(Responses.unexpectedMessage));
        return;
    }
  }

  /** Runs `go` at once without budgets; else after the budget check, unless this connection closed meanwhile. */
  private whenBudgetAllows(ips: readonly string[], refusal: Message, go: () => void): void {
    if (!this.hub.budgeted) {
      go();
      return;
    }
    void this.hub.budgetAllows(ips).then((ok) => {
      if (this.done) return;
      if (ok) go();
      else {
        this.hub.refused('budget');
        this.close('byte budget spent', refusal);
      }
    });
  }

  private join(): void {
    const hub = this.hub;
    if (hub.overLimit()) {
      hub.refused('full');
      this.close('relay full', { type: 'relayFull' });
      return;
    }
    if (this.joined || hub.joined.has(this.hex)) {
      hub.refused('already-connected');
      this.close('already connected', response(Responses.alreadyConnected));
      return;
    }
    this.joined = true;
    hub.joined.set(this.hex, this);
    this.send(response(Responses.success));
  }

  private connect(target: Buffer): void {
    const hub = this.hub;
    const peer = target.length === 32 ? hub.joined.get(target.toString('hex')) : undefined;
    if (!peer) {
      hub.refused('not-found');
      this.close('peer not joined', response(Responses.notFound));
      return;
    }
    if (hub.sessions.size >= hub.maxSessions) {
      hub.refused('full');
      this.close('too many sessions', { type: 'relayFull' });
      return;
    }
    const { clientKey, serverKey } = hub.sessions.create(this.id, peer.id);
    const common = { address: hub.invitationAddress, port: hub.invitationPort };
    peer.send({ type: 'sessionInvitation', from: this.id, key: serverKey, ...common, serverSocket: true });
    this.close('invitation sent', {
      type: 'sessionInvitation',
      from: peer.id,
      key: clientKey,
      ...common,
      serverSocket: false,
    });
  }
}
