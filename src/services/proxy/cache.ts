// On-disk cache for immutable upstream content (digest §7).
import type { FastifyBaseLogger } from 'fastify';
import type { ForwardOptions, ForwardRequest, Upstream } from './forward.ts';

export interface ProxyCache {
  serve(r: ForwardRequest, o: ForwardOptions, log: FastifyBaseLogger): Promise<Upstream>;
}
