// Following an upstream's redirect, the part every outbound client shares: which answers are
// redirects (RFC 9110 §15.4: 301, 302, 303, 307 and 308 with a Location), the target resolved
// against the URL that answered, checked against the caller's allow-list, and a cap on hops. The
// caller keeps the rest (which methods follow, which headers go on, caching per hop) and drains
// the redirect's body before it asks.

export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

export type RedirectFault = 'invalid' | 'not-allowed' | 'too-many';

export interface RedirectRules {
  /** Redirects that may be followed in one request. */
  max: number;
  allowed(target: URL): boolean;
  /** The caller's error for each fault (with the target when it could be read). */
  fail(fault: RedirectFault, target?: URL): Error;
}

/**
 * Where a redirect answer leads, or null when the answer is not a redirect. `followed` counts the
 * redirects this request already followed. Throws the caller's error for a Location that is not a
 * URL, a target off its list, or one hop too many.
 */
export function redirectTarget(
  status: number,
  location: string | undefined,
  from: URL,
  followed: number,
  rules: RedirectRules,
): URL | null {
  if (!REDIRECT_STATUSES.has(status) || !location) return null;
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw rules.fail('invalid');
  }
  if (!rules.allowed(next)) throw rules.fail('not-allowed', next);
  if (followed >= rules.max) throw rules.fail('too-many', next);
  return next;
}
