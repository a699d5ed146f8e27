// One TCP port, two modes (digest §2): the first byte 0x16 (a TLS handshake record) means protocol
// mode, anything else session mode. Classification is per socket and asynchronous, so a silent
// client never stalls accepts; one that stays silent for a second is closed.
import { constants } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { Logger } from 'pino';

const FIRST_BYTE_MS = 1000;

export interface ListenerOptions {
  certPem: string;
  keyPem: string;
  messageTimeoutMs: number;
  networkTimeoutMs: number;
  logger: Logger;
  /** A protocol-mode connection after its TLS handshake, with the client's certificate DER. */
  onTls(sock: TLSSocket, certDer: Buffer): void;
  /** A session-mode socket, paused, its first bytes unshifted back. */
  onPlain(sock: Socket): void;
}

export interface Listener {
  server: Server;
  close(): Promise<void>;
}

export function createListener(o: ListenerOptions): Listener {
  const sockets = new Set<Socket>();
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
    const cert = tls.getPeerCertificate(true);
    // strelaysrv drops connections that present no client certificate.
    if (!cert || !Buffer.isBuffer(cert.raw) || cert.raw.length === 0) {
      tls.destroy();
      return;
    }
    o.onTls(tls, cert.raw);
  });
  tlsServer.on('tlsClientError', (err, tls) => {
    o.logger.debug({ err: err.message }, 'relay tls handshake failed');
    tls.destroy();
  });

  const server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => sock.destroy());
    sock.setNoDelay(true);
    sock.setKeepAlive(true, o.networkTimeoutMs);
    const silent = setTimeout(() => sock.destroy(), FIRST_BYTE_MS);
    sock.once('data', (chunk: Buffer) => {
      clearTimeout(silent);
      sock.pause();
      sock.unshift(chunk);
      if (chunk[0] === 0x16) tlsServer.emit('connection', sock);
      else o.onPlain(sock);
    });
    sock.once('close', () => clearTimeout(silent));
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
