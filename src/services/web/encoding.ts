// Content-coding for the page and its assets: brotli or gzip when the client accepts it. Assets are
// compressed once at load; the page (rendered per request, ~20 KB) is gzipped on the fly.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export type Coding = 'br' | 'gzip';

/** The first of `offered` that Accept-Encoding allows (q=0 refuses one), or null for identity. */
export function negotiate(
  header: string | string[] | undefined,
  offered: readonly Coding[] = ['br', 'gzip'],
): Coding | null {
  const h = Array.isArray(header) ? header.join(',') : (header ?? '');
  const q = new Map<string, number>();
  for (const part of h.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const v = qp ? Number(qp.slice(2)) : 1;
    q.set(name, Number.isFinite(v) ? v : 0);
  }
  const allowed = (c: Coding) => (q.get(c) ?? q.get('*') ?? 0) > 0;
  return offered.find(allowed) ?? null;
}

export function precompress(body: Buffer): Record<Coding, Buffer> {
  return {
    br: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
    gzip: gzipSync(body, { level: 9 }),
  };
}

export function gzipPage(body: string): Buffer {
  return gzipSync(body, { level: 6 });
}
