// Raw tus 1.0 requests for tests: creation, PATCH, a PATCH cut mid-body, and the X-Upload-Result header.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

const T = { 'tus-resumable': '1.0.0' };
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Text that compresses, then random bytes: both paths of the store, and byte-exact checks. */
export function sample(size: number): Buffer {
  const text = Buffer.from('tus resumable upload line\n'.repeat(Math.ceil(size / 52)));
  return Buffer.concat([text.subarray(0, size / 2), randomBytes(size - size / 2)]);
}

/**
 * Sends `send` bytes of a PATCH that announces `total`, then cuts the connection. The cut waits until
 * the server is writing the upload (a HEAD on it is turned away with 423) and a moment more, so the
 * bytes sent have arrived: a cut only loses what is still in flight. Resolves once the server has
 * let go of the upload (a HEAD is answered again), so the caller reads the offset it stored.
 */
export async function cutPatch(url: string, offset: number, body: Buffer, send: number, total = body.length) {
  const req = request(url, {
    method: 'PATCH',
    headers: {
      ...T,
      'upload-offset': String(offset),
      'content-type': 'application/offset+octet-stream',
      'content-length': String(total),
    },
  });
  req.on('error', () => {});
  await new Promise<void>((resolve) => req.write(body.subarray(0, send), () => resolve()));
  for (let i = 0; i < 200; i++) {
    if ((await fetch(url, { method: 'HEAD', headers: T })).status === 423) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 300));
  req.destroy();
  // The server keeps the lock until the cut PATCH's bytes are written (a loaded machine takes a
  // while): a HEAD before then gets 423 and no offset. Resolve once the upload is free again.
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    if ((await fetch(url, { method: 'HEAD', headers: T })).status !== 423) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function create(base: string, length: number, meta: Record<string, string>, headers = {}) {
  const metadata = Object.entries(meta)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(',');
  return fetch(`${base}/api/upload/`, {
    method: 'POST',
    headers: { ...T, 'upload-length': String(length), 'upload-metadata': metadata, ...headers },
  });
}

export const patch = (url: string, offset: number, body: Buffer, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'PATCH',
    headers: {
      ...T,
      'upload-offset': String(offset),
      'content-type': 'application/offset+octet-stream',
      ...headers,
    },
    body: new Uint8Array(body),
  });

export const decodeResult = (res: Response) =>
  JSON.parse(Buffer.from(res.headers.get('x-upload-result') ?? '', 'base64').toString('utf8'));

/**
 * A TCP relay to `port` that cuts a connection once the client has sent `cutAfter` bytes on it (the
 * first `times` such connections; later ones pass):
 * a real client (tus-js-client) loses its connection mid-body, as on a dropped network.
 */
export async function cuttingRelay(
  port: number,
  cutAfter: number,
  times = Number.POSITIVE_INFINITY,
): Promise<{ url: string; close(): Promise<void> }> {
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    let sent = cuts < times ? 0 : Number.NEGATIVE_INFINITY;
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      const room = cutAfter - sent;
      if (room <= 0) return;
      sent += chunk.length;
      if (chunk.length < room) upstream.write(chunk);
      else {
        cuts++;
        upstream.write(chunk.subarray(0, room), () => setTimeout(cut, 100));
      }
    });
    upstream.pipe(client);
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', () => upstream.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${own}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
