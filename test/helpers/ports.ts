// Free loopback ports for servers that cannot take port 0 themselves (redis-server, syncthing).
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * A loopback port where a connection is refused for the whole run: port 1 (tcpmux) is below the
 * ephemeral range that port-0 listeners get, so no test server can land on it. A port from
 * `freePort()` is free only when asked: a server of a test file running beside this one may take it
 * before the "refused" connection is made, and then the connection reaches that server.
 */
export const CLOSED_PORT = 1;
