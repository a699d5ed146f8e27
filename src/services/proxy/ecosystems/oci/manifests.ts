// Manifests and indexes: by digest they never change (cached, and checked against the digest
// before anything is stored); by tag they are kept for a short TTL, then confirmed with a HEAD
// (which Docker Hub does not count against its pull limit) and served stale when the registry is
// unreachable. One upstream fetch per key at a time, however many clients ask.
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { SingleFlight } from '../../../../infra/cache/single-flight.ts';
import { humanBytes } from '../../../../infra/config/schema.ts';
import { BodyTooLarge, readCapped } from '../../../../infra/egress/capped-body.ts';
import type { ProxyStore } from '../../cache.ts';
import { ociError } from './errors.ts';
import type { Digest, ImageName } from './reference.ts';
import { type RegistryClient, upstreamRefusal } from './upstream.ts';

export interface Manifest {
  body: Buffer;
  type: string;
  digest: string;
}

/** What clients accept, as a stable part of a tag's cache key (the registry answers by it). */
export function acceptKey(accept: string | undefined): string {
  const types = (accept ?? '')
    .split(',')
    .map((t) => (t.split(';')[0] ?? '').trim().toLowerCase())
    .filter(Boolean);
  return [...new Set(types)].sort().join(',');
}

export function digestOf(body: Buffer, algorithm: 'sha256' | 'sha512'): string {
  return `${algorithm}:${createHash(algorithm).update(body).digest('hex')}`;
}

export interface ManifestOptions {
  tagTtlMs: number;
  maxBytes: number;
  now: () => number;
}

export class Manifests {
  private flights = new SingleFlight<Manifest>();
  private confirms = new SingleFlight<Manifest | null>();
  private readonly store: ProxyStore | null;
  private readonly up: RegistryClient;
  private readonly o: ManifestOptions;

  constructor(store: ProxyStore | null, up: RegistryClient, o: ManifestOptions) {
    this.store = store;
    this.up = up;
    this.o = o;
  }

  /** The manifest `name` + tag or digest, from the cache or the registry (GET). */
  async get(
    name: ImageName,
    tag: string | null,
    digest: Digest | null,
    accept: string | undefined,
    log: FastifyBaseLogger,
  ): Promise<Manifest> {
    if (digest) {
      const key = `oci:manifest:${digest.text}`;
      const hit = await this.cached(key);
      if (hit) return hit;
      return this.flights.run(key, () => this.fetch(name, digest.text, digest, accept));
    }
    const ref = tag as string;
    const key = `oci:tag:${name.registry}/${name.repo}:${ref}\n${acceptKey(accept)}`;
    const e = await this.store?.peek(key);
    if (e) {
      const stored = await this.cached(key);
      if (stored && this.o.now() - e.checkedAt < this.o.tagTtlMs) return stored;
      if (stored) {
        const confirmed = await this.confirms
          .run(`${key}\nhead`, () => this.confirm(name, ref, accept, stored, key))
          .catch((err: unknown) => {
            // Registry unreachable or refusing for now: the last known manifest beats a failed pull.
            log.warn(
              { registry: name.registry, repo: name.repo, tag: ref, reason: (err as Error).message },
              'oci tag revalidation failed; serving the stored manifest',
            );
            return stored;
          });
        if (confirmed) return confirmed;
      }
    }
    return this.flights.run(key, async () => {
      const m = await this.fetch(name, ref, null, accept);
      void this.store?.put(key, m.body, meta(m));
      return m;
    });
  }

  /** HEAD of a manifest the cache does not hold: the registry's answer, nothing stored. */
  async head(
    name: ImageName,
    ref: string,
    accept: string | undefined,
  ): Promise<{ headers: Record<string, string> }> {
    const r = await this.up.request(name, 'HEAD', `manifests/${ref}`, accept ? { accept } : {});
    r.body.resume();
    if (r.status !== 200) throw upstreamRefusal(r.status, r.headers, `manifest ${name.client}:${ref}`);
    const headers: Record<string, string> = {};
    for (const h of ['content-type', 'content-length', 'docker-content-digest'])
      if (r.headers[h]) headers[h] = r.headers[h];
    return { headers };
  }

  /** Only what the cache already holds (HEAD answers from it without asking upstream). */
  async peekCached(
    name: ImageName,
    tag: string | null,
    digest: Digest | null,
    accept: string | undefined,
  ): Promise<Manifest | undefined> {
    if (digest) return this.cached(`oci:manifest:${digest.text}`);
    const key = `oci:tag:${name.registry}/${name.repo}:${tag}\n${acceptKey(accept)}`;
    const e = await this.store?.peek(key);
    return e && this.o.now() - e.checkedAt < this.o.tagTtlMs ? this.cached(key) : undefined;
  }

  private async cached(key: string): Promise<Manifest | undefined> {
    const hit = await this.store?.get(key);
    if (!hit) return undefined;
    const h = hit.entry.meta.headers;
    return { body: hit.body, type: h['content-type'] ?? '', digest: h['docker-content-digest'] ?? '' };
  }

  /** A stale tag: still the same digest upstream? Then it is fresh again; else null (fetch anew). */
  private async confirm(
    name: ImageName,
    tag: string,
    accept: string | undefined,
    stored: Manifest,
    key: string,
  ): Promise<Manifest | null> {
    const r = await this.up.request(name, 'HEAD', `manifests/${tag}`, accept ? { accept } : {});
    r.body.resume();
    if (r.status === 200 && r.headers['docker-content-digest'] === stored.digest) {
      await this.store?.touch(key);
      return stored;
    }
    if (r.status === 200 || r.status === 404) return null;
    throw upstreamRefusal(r.status, r.headers, `manifest ${name.client}:${tag}`);
  }

  /** GET from the registry, size-capped and verified; stored by digest (the caller stores tags). */
  private async fetch(
    name: ImageName,
    ref: string,
    want: Digest | null,
    accept: string | undefined,
  ): Promise<Manifest> {
    const what = `manifest ${name.client}${want ? '@' : ':'}${ref}`;
    const r = await this.up.request(name, 'GET', `manifests/${ref}`, accept ? { accept } : {});
    if (r.status !== 200) {
      r.body.resume();
      throw upstreamRefusal(r.status, r.headers, what);
    }
    let body: Buffer;
    try {
      body = await readCapped(r.body, this.o.maxBytes, { declared: r.headers['content-length'] });
    } catch (err) {
      if (err instanceof BodyTooLarge)
        throw ociError(413, 'SIZE_INVALID', `${what} exceeds ${humanBytes(this.o.maxBytes)}`);
      throw err;
    }
    // The digest asked for, else the one the registry states: the body must hash to it.
    const stated = want?.text ?? r.headers['docker-content-digest'];
    const algorithm = stated?.startsWith('sha512:') ? 'sha512' : 'sha256';
    const actual = digestOf(body, algorithm);
    if (stated !== undefined && stated !== actual)
      throw ociError(502, 'DIGEST_INVALID', `${what} does not match its digest`);
    const m: Manifest = {
      body,
      type: r.headers['content-type'] ?? 'application/octet-stream',
      digest: actual,
    };
    void this.store?.put(`oci:manifest:${actual}`, body, meta(m));
    return m;
  }
}

function meta(m: Manifest) {
  return { headers: { 'content-type': m.type, 'docker-content-digest': m.digest } };
}
