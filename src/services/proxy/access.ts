// The private mirror's access prefix (DEVUTIL_PROXY_SECRET): every proxied path starts with
// /t/<secret>/. Routes carry a parameter in its place, never the secret itself: a route template is
// public (the OpenAPI document lists it, request metrics are labelled with it). The segment a client
// sends is compared with the secret in constant time.

import { secretMatches } from '../../infra/http/bearer.ts';
import { forbidden } from '../../infra/http/errors.ts';

/** The route template segment that stands for /t/<secret>. */
export const ACCESS_SEGMENT = '/t/:secret';

const REFUSED = 'this proxy needs its access prefix /t/<secret>/';

/**
 * `raw` (the raw path and query after the proxy's mount) without its access prefix, from its `/`;
 * throws 403 unless it starts with /t/<the secret>/.
 */
export function afterAccess(raw: string, secret: string): string {
  const end = raw.startsWith('/t/') ? raw.indexOf('/', 3) : -1;
  if (end === -1 || !secretMatches(raw.slice(3, end), secret)) throw forbidden(REFUSED);
  return raw.slice(end);
}
