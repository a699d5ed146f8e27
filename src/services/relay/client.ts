// A raw relay-protocol client (the Go lib/relay/client's behaviour): join, connect requests,
// session joins. Used by the tests and the benchmark against both devutil and strelaysrv.
import { connect as netConnect, type Socket } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { deviceIdOf } from './protocol/device-id.ts';
import { encode, FrameDecoder, type Message } from './protocol/messages.ts';
import { generateIdentity, type Identity } from './x509.ts';

export interface ClientIdentity extends Identity {
  raw: Buffer;
}

export function clientIdentity(): ClientIdentity {
  const id = generateIdentity();
  return { ...id, raw: deviceIdOf(id.certDer) };
}

/** Reads framed messages from a socket one at a time. Pings are answered automatically. */
export class MessageStream {
  private dec = new FrameDecoder(1 << 16);
  private queue: Message[] = [];
  private waiters: { resolve(m: Message): void; reject(e: Error): void }[] = [];
  private ended: Error | null = null;
  autoPong = true;

  readonly sock: Socket;
  constructor(sock: Socket) {
    this.sock = sock;
    sock.on('data', (chunk: Buffer) => {
      this.dec.push(chunk);
      for (let m = this.dec.next(); m; m = this.dec.next()) {
        if (m.type === 'ping' && this.autoPong) sock.write(encode({ type: 'pong' }));
        const w = this.waiters.shift();
        if (w) w.resolve(m);
        else this.queue.push(m);
      }
    });
    const end = (err?: Error) => {
      this.ended ??= err ?? new Error('connection closed');
      for (const w of this.waiters.splice(0)) w.reject(this.ended);
    };
    sock.on('close', () => end());
    sock.on('error', (e) => end(e));
  }

  send(m: Message): void {
    this.sock.write(encode(m));
  }

  /** The next message; rejects when the connection closes first or after timeoutMs. */
  next(timeoutMs = 10_000): Promise<Message> {
    const q = this.queue.shift();
    if (q) return Promise.resolve(q);
    if (this.ended) return Promise.reject(this.ended);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no message within ${timeoutMs}ms`)), timeoutMs);
      this.waiters.push({
        resolve: (m) => {
          clearTimeout(t);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      });
    });
  }

  /** Resolves when the relay closes the connection. */
  closed(): Promise<void> {
    if (this.sock.destroyed || this.sock.readableEnded) return Promise.resolve();
    return new Promise((resolve) => this.sock.once('close', () => resolve()));
  }

  close(): void {
    this.sock.destroy();
  }
}

/** `from` picks the local address (e.g. 127.0.0.2, to be another client on loopback). */
export function connectTls(host: string, port: number, id: Identity, from?: string): Promise<MessageStream> {
  return new Promise((resolve, reject) => {
    const sock: TLSSocket = tlsConnect({
      host,
      port,
      ...(from ? { localAddress: from } : {}),
      cert: id.certPem,
      key: id.keyPem,
      ALPNProtocols: ['bep-relay'],
      rejectUnauthorized: false,
    });
    sock.once('secureConnect', () => {
      sock.off('error', reject);
      resolve(new MessageStream(sock));
    });
    sock.once('error', reject);
  });
}

/** Joins the relay permanently; returns the stream (invitations arrive on it) and the response. */
export async function joinRelay(
  host: string,
  port: number,
  id: Identity,
  token?: string,
  from?: string,
): Promise<{ stream: MessageStream; reply: Message }> {
  const stream = await connectTls(host, port, id, from);
  stream.send({ type: 'joinRelayRequest', token: token ?? '' });
  return { stream, reply: await stream.next() };
}

/** A temporary connection asking for `target`: a SessionInvitation on success, else a Response. */
export async function requestSession(
  host: string,
  port: number,
  id: Identity,
  target: Buffer,
  from?: string,
): Promise<Message> {
  const stream = await connectTls(host, port, id, from);
  try {
    stream.send({ type: 'connectRequest', id: target });
    return await stream.next();
  } finally {
    stream.close();
  }
}

/** Opens a session-mode socket with `key`; resolves with the pipe once the relay said success. */
export function joinSession(host: string, port: number, key: Buffer, from?: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = netConnect({ host, port, ...(from ? { localAddress: from } : {}) }, () => {
      sock.setNoDelay(true);
      sock.write(encode({ type: 'joinSessionRequest', key }));
    });
    const dec = new FrameDecoder();
    const onData = (chunk: Buffer) => {
      dec.push(chunk);
      const m = dec.next();
      if (!m) return;
      sock.off('data', onData);
      sock.off('error', reject);
      sock.pause();
      const rest = dec.rest();
      if (rest.length) sock.unshift(rest);
      if (m.type === 'response' && m.code === 0) resolve(sock);
      else {
        sock.destroy();
        reject(
          new Error(`session join refused: ${m.type === 'response' ? `${m.code} ${m.message}` : m.type}`),
        );
      }
    };
    sock.on('data', onData);
    sock.once('error', reject);
    sock.once('close', () => reject(new Error('session socket closed before the response')));
  });
}
