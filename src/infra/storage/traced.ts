// The blob store seen through tracing (infra/observe/tracing.ts): put, get, head, delete and
// presign run in a child span of the request that asked for them. Used only when tracing is on;
// anything else the store offers passes through untouched, whatever the backend adds later.
import { inSpan } from '../observe/tracing.ts';
import type { BlobStore } from './blob-store.ts';

const TRACED = new Set<PropertyKey>(['put', 'get', 'head', 'delete', 'presign']);

/**
 * `store` with spans named `blob <op>`. Attributes name the backend and the key's namespace
 * ("files", "avatars"), never the key: a file key is a capability of its own.
 */
export function tracedBlobs(store: BlobStore): BlobStore {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (!TRACED.has(prop) || typeof value !== 'function') return value;
      let fn = wrapped.get(prop);
      if (!fn) {
        const op = String(prop);
        fn = (key: string, ...rest: unknown[]) =>
          inSpan(
            `blob ${op}`,
            {
              'devutil.blob.op': op,
              'devutil.blob.backend': target.kind,
              'devutil.blob.namespace': String(key).split('/', 1)[0],
            },
            async (span) => {
              const out: unknown = await value.call(target, key, ...rest);
              if (op === 'get' || op === 'head') span?.set({ 'devutil.blob.found': out !== null });
              return out;
            },
          );
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
}
