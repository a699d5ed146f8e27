import { join } from 'node:path';
import { it } from 'node:test';
import { Agent, fetch as uf } from 'undici';
import { startRegistryWorld } from '../fixtures/oci/registry.ts';
import { startTestServer, tempDir } from '../helpers/server.ts';

it('debug', { timeout: 120_000 }, async () => {
  const w = await startRegistryWorld(join(tempDir('dbg-'), 'w'));
  const p = await startTestServer({
    env: {
      DEVUTIL_PROXY_ECOSYSTEMS: 'oci',
      DEVUTIL_PROXY_RESOLVE: w.resolve.join(','),
      DEVUTIL_PROXY_UPSTREAM_CA: w.caFile,
      DEVUTIL_PROXY_MAX_CONCURRENT: '64',
    },
  });
  const image = w.addImage('library/six', '1', [700_000, 400_000, 250_000]);
  const t0 = Date.now();
  const res = await Promise.allSettled(
    Array.from({ length: 16 }, async (_, k) => {
      const dispatcher = new Agent({ connect: { localAddress: `127.0.0.${10 + k}` } });
      return Promise.all(
        [image.config, ...image.layers].map(async (b) => {
          const r = await uf(`${p.url}/v2/docker.io/library/six/blobs/${b.digest}`, { dispatcher });
          const n = (await r.arrayBuffer()).byteLength;
          return `${r.status}:${n}`;
        }),
      );
    }),
  );
  console.log(
    res
      .map((r) =>
        r.status === 'fulfilled' ? r.value.join(',') : `ERR ${r.reason?.cause?.message ?? r.reason}`,
      )
      .join('\n'),
  );
  console.log('16 clients', Date.now() - t0, 'ms');
  console.log(
    w.seen
      .filter((s) => s.url.includes('six'))
      .map((s) => `${s.method} ${s.url.slice(-20)} ${s.status}`)
      .join('\n'),
  );
  await p.close();
  await w.close();
});
