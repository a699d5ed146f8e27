// The one check of a given secret (an `Authorization: Bearer <token>` header, a path's access
// prefix) against a configured one: both sides hashed first, so the comparison takes the same time
// whatever the given value's length or content.
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** True when `given` equals the configured `secret` (never for an empty secret). */
export function secretMatches(given: string, secret: string): boolean {
  if (!secret) return false;
  return timingSafeEqual(digest(given), digest(secret));
}

export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return secretMatches(m?.[1] ?? '', token) && m !== null;
}
