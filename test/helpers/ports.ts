// Free loopback ports for servers that cannot take port 0 themselves (redis-server, syncthing).
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';

/**
 * The first port of the kernel's ephemeral range (the ports port-0 listeners and outgoing
 * connections get). A port below it is never handed out by the kernel on its own.
 */
function ephemeralStart(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (low > 24_000) return low;
  } catch {} // not Linux: the IANA range's start
  return 49_152;
}

/**
 * Binds `port` (0: any) on loopback and closes it again; the port it got, or null if taken or
 * unreachable. A port the kernel lets a server bind can still be one no client reaches: a NAT rule
 * left behind by a container runtime (podman's published ports outlive a container whose network
 * teardown never ran) sends every connection to it to an address that refuses. A server there
 * starts, and every client gets "connection refused" (a redis-sentinel and an admin-oidc node did so
 * in CI runs), so the port counts only once a connection to it reached this server.
 */
export function probe(port: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(null) : reject(err),
    );
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      const got = typeof addr === 'object' && addr ? addr.port : 0;
      let settled = false;
      const client = connect(got, '127.0.0.1');
      const done = (reached: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        client.destroy();
        srv.close(() => resolve(reached ? got : null));
      };
      // Refused, or answered by someone else: not this port. A loaded machine gets 5 s to accept.
      const timer = setTimeout(() => done(false), 5000);
      timer.unref();
      srv.once('connection', (socket) => {
        socket.destroy();
        done(true);
      });
      client.once('error', () => done(false));
    });
  });
}

/**
 * A loopback port free now, taken from below the ephemeral range: between this call and the
 * caller's own bind, a server of another test file that listens on port 0 (the kernel's pick, from
 * the ephemeral range) cannot take it. Only another `freePort()` picking the same random port in
 * that moment could (about one chance in ten thousand).
 */
export async function freePort(): Promise<number> {
  const top = ephemeralStart() - 1;
  const bottom = 23_000; // above Syncthing's and the relay's own defaults (21027, 22000, 22067, 22070)
  for (let i = 0; i < 20; i++) {
    const got = await probe(bottom + Math.floor(Math.random() * (top - bottom + 1)));
    if (got) return got;
  }
  const got = await probe(0);
  if (!got) throw new Error('no free loopback port');
  return got;
}

/**
 * A loopback port where a connection is refused for the whole run: port 1 (tcpmux) is below the
 * ephemeral range that port-0 listeners get, so no test server can land on it. A port from
 * `freePort()` is free only when asked: a server of a test file running beside this one may take it
 * before the "refused" connection is made, and then the connection reaches that server.
 */
export const CLOSED_PORT = 1;
