// The one check of an `Authorization: Bearer <token>` header against a configured secret: both sides
// hashed first, so the comparison takes the same time whatever the given token's length or content.
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function bearerMatches(header: string | undefined, token: string): boolean {
  if (!token) return false;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return timingSafeEqual(digest(m?.[1] ?? ''), digest(token)) && m !== null;
}
