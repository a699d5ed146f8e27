// The security headers of the pages this server renders (the home page and the admin page): no
// inline script, scripts and styles from this origin only, never framed.
import type { FastifyReply } from 'fastify';

/**
 * The page's CSP: scripts only from this origin (no inline script anywhere), never framed,
 * previews only from this origin. `data:` images cover the CSS icons. `connect` adds the origins
 * the enabled sections read from (PageSection.connect).
 */
export function pageCsp(connect: readonly string[] = []): string {
  const origins = [...new Set(connect.map((u) => new URL(u).origin))];
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    ["connect-src 'self'", ...origins].join(' '),
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "manifest-src 'self'",
  ].join('; ');
}

/** The page's security headers (the admin page's too, with the default CSP: no extra origins). */
export function secure(reply: FastifyReply, csp: string = pageCsp()): FastifyReply {
  return reply
    .header('content-security-policy', csp)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('x-content-type-options', 'nosniff');
}
