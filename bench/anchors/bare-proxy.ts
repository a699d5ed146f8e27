// The simplest reverse proxy Node can run: node:http in front, one undici Agent to one HTTPS
// upstream, bodies piped. bench/proxy.ts's "bare node:http + undici" anchor (the runtime's ceiling).
// argv: listen port, upstream port, upstream host name (SNI, Host), CA file, path prefix to strip.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { pipeline } from 'node:stream';
import { Agent, request } from 'undici';

const [port = '0', upPort = '443', host = 'localhost', ca = '', prefix = ''] = process.argv.slice(2);
const agent = new Agent({ connect: { ca: readFileSync(ca), servername: host }, connections: 128 });

createServer((req, res) => {
  const path = (req.url ?? '/').slice(prefix.length);
  request(`https://127.0.0.1:${upPort}${path}`, { dispatcher: agent, headers: { host } }).then(
    (up) => {
      const h: Record<string, string> = {};
      for (const k of ['content-type', 'content-length', 'etag', 'last-modified']) {
        const v = up.headers[k];
        if (typeof v === 'string') h[k] = v;
      }
      // The client may be gone already (wrk ending a run): then there is nothing to pipe to.
      up.body.on('error', () => {}); // an aborted client is not this proxy's failure
      if (res.destroyed) return void up.body.destroy();
      res.writeHead(up.statusCode, h);
      pipeline(up.body, res, () => {});
    },
    () => {
      res.statusCode = 502;
      res.end();
    },
  );
}).listen(Number(port), '127.0.0.1');
