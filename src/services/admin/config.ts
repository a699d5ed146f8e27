// Admin section: the operator's dashboard (/admin) and its JSON (/rest/api/v1/admin/stats), off
// until DEVUTIL_ADMIN_TOKEN is set; the counting behind them runs only then too.
import type { Config } from '../../config.ts';
import { duration, int, rate, str } from '../../infra/config/schema.ts';

export const adminSection = {
  token: str('', {
    secret: true,
    // Short tokens are guessable against a public instance, rate limit or not.
    pattern: /^(|\S{16,})$/,
    hint: 'empty, or at least 16 characters without spaces',
    doc: 'Bearer token of the admin dashboard /admin and GET /rest/api/v1/admin/stats (empty = both off, 404)',
  }),
  flushIntervalMs: duration(5000, {
    unit: 'ms',
    min: 500,
    max: 60_000,
    doc: 'how often each instance adds its usage counts to the shared store (Redis when configured)',
  }),
  topEntries: int(64, {
    min: 8,
    max: 1000,
    doc: 'keys each top-N table (clients, repositories, packages, files) keeps per time bucket: bounds memory',
  }),
  rateLimit: rate('60/min', { doc: 'per-client budget for admin requests (also slows token guessing)' }),
};

/** The admin token, or '' when the admin is off (or not among this server's utilities). */
export function adminToken(config: Config): string {
  return (config as Partial<Config>).admin?.token ?? '';
}
