// One TCP port, two modes (docs/protocols/syncthing-relay.md §2): the first byte 0x16 (a TLS handshake
// record) means protocol mode, anything else session mode. Classification is per socket and asynchronous,
// so a silent client never stalls accepts; one that stays silent for a second is closed. Every socket must
// deliver its first whole message within message-timeout of accept, however slowly it trickles.
import { constants } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket, type Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';

const FIRST_BYTE_MS = 1000;

/** Called once the connection's first message has been read whole: its deadline no longer applies. */
export type FirstMessage = () => void;

export interface ListenerOptions {
  certPem: string;
  keyPem: string;
  messageTimeoutMs: number;
  networkTimeoutMs: number;
  logger: Logger;
  /** The connection budget, asked at accept; false means it closed the socket. */
  admit?(sock: Socket): boolean;
  /** A socket was closed because its first message missed the deadline. */
  onDeadline?(): void;
  /** A protocol-mode connection after its TLS handshake, with the client's certificate DER. */
  onTls(sock: TLSSocket, certDer: Buffer, firstMessage: FirstMessage): void;
  /** A session-mode socket, paused, its first bytes unshifted back. */
  onPlain(sock: Socket, firstMessage: FirstMessage): void;
}

export interface Listener {
  server: Server;
  close(): Promise<void>;
}

/** The TLS socket wrapping a raw one has the same four-tuple: how the two are matched up again. */
const tupleOf = (s: Socket) => `${s.localAddress} ${s.localPort} ${s.remoteAddress} ${s.remotePort}`;

export function createListener(o: ListenerOptions): Listener {
  const sockets = new Set<Socket>();
  /** Deadline cancellers of raw sockets handed to TLS and not yet through the handshake. */
  const handshaking = new Map<string, FirstMessage>();
  // Made on the first protocol-mode connection, not at start: the first TLS context of a process
  // costs OpenSSL's set-up (~100-250 ms of CPU on a small machine) that the HTTP side's first answer
  // need not wait for. The certificate is the relay's own (identity.ts), so it is known good.
  let tlsServer: TlsServer | undefined;
  const tls = (): TlsServer => {
    tlsServer ??= protocolServer(o, handshaking);
    return tlsServer;
  };

  const server = createServer((sock) => {
    if (o.admit && !o.admit(sock)) return;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => sock.destroy());
    sock.setNoDelay(true);
    sock.setKeepAlive(true, o.networkTimeoutMs);
    // Counted from accept across the TLS handshake and the first frame: an idle timer would let a
    // 1036-byte frame sent a byte a minute hold the socket for hours. Destroying the raw socket
    // also ends the TLS socket built over it.
    const deadline = setTimeout(() => {
      o.onDeadline?.();
      sock.destroy();
    }, o.messageTimeoutMs);
    const firstMessage = () => clearTimeout(deadline);
    const silent = setTimeout(() => sock.destroy(), FIRST_BYTE_MS);
    sock.once('data', (chunk: Buffer) => {
      clearTimeout(silent);
      sock.pause();
      sock.unshift(chunk);
      if (chunk[0] === 0x16) {
        const key = tupleOf(sock);
        handshaking.set(key, firstMessage);
        sock.once('close', () => {
          if (handshaking.get(key) === firstMessage) handshaking.delete(key);
        });
        tls().emit('connection', sock);
      } else o.onPlain(sock, firstMessage);
    });
    sock.once('close', () => {
      clearTimeout(silent);
      clearTimeout(deadline);
    });
  });

  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** The TLS side of protocol mode: handshakes, then hands the socket and the peer's certificate on. */
function protocolServer(o: ListenerOptions, handshaking: Map<string, FirstMessage>): TlsServer {
  const tlsServer = createTlsServer({
    cert: o.certPem,
    key: o.keyPem,
    requestCert: true,
    rejectUnauthorized: false, // peers are identified by certificate hash, never by a CA
    ALPNProtocols: ['bep-relay'], // Syncthing aborts unless exactly this is selected
    minVersion: 'TLSv1.2',
    handshakeTimeout: o.messageTimeoutMs,
    secureOptions: constants.SSL_OP_NO_TICKET,
  });
  tlsServer.on('secureConnection', (tls: TLSSocket) => {
    const key = tupleOf(tls);
    const firstMessage = handshaking.get(key);
    handshaking.delete(key);
    const cert = tls.getPeerCertificate(true);
    // strelaysrv drops connections that present no client certificate.
    if (!firstMessage || !cert || !Buffer.isBuffer(cert.raw) || cert.raw.length === 0) {
      tls.destroy();
      return;
    }
    o.onTls(tls, cert.raw, firstMessage);
  });
  tlsServer.on('tlsClientError', (err, tls) => {
    o.logger.debug({ err: err.message }, 'relay tls handshake failed');
    tls.destroy();
  });
  return tlsServer;
}
