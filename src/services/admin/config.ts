// Admin section: the operator's dashboard (/admin) and its JSON (/rest/api/v1/admin/stats), off
// until DEVUTIL_ADMIN_TOKEN or DEVUTIL_ADMIN_OIDC_ISSUER is set; the counting behind them runs only
// then too. With OIDC the page signs operators in at the identity provider (oidc.ts) and the token
// still opens the JSON for scripts.
import type { Config } from '../../config.ts';
import { duration, int, list, rate, str, url } from '../../infra/config/schema.ts';

export const adminSection = {
  token: str('', {
    secret: true,
    // Short tokens are guessable against a public instance, rate limit or not.
    pattern: /^(|\S{16,})$/,
    hint: 'empty, or at least 16 characters without spaces',
    doc: 'Bearer token of the admin dashboard /admin and GET /rest/api/v1/admin/stats (empty and no OIDC issuer = both off, 404; with OIDC the token still opens the JSON for scripts)',
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
  oidcIssuer: url('', {
    optional: true,
    doc: 'OpenID Connect issuer URL for single sign-on to /admin (empty = off); discovered through its /.well-known/openid-configuration. https, or http only for a host mapped by DEVUTIL_EGRESS_RESOLVE',
  }),
  oidcClientId: str('', { doc: 'client id registered at the identity provider (required with the issuer)' }),
  oidcClientSecret: str('', {
    secret: true,
    doc: 'client secret (empty = a public client, PKCE only)',
  }),
  oidcRedirectUrl: url('', {
    optional: true,
    shownDefault: '<server.publicUrl>/admin/oidc/callback',
    doc: 'callback URL registered at the provider (default: the public URL + /admin/oidc/callback)',
  }),
  oidcScopes: list(['openid', 'email', 'profile'], {
    doc: 'scopes asked for (openid is always added); add the one that carries the groups claim if the provider needs it',
  }),
  oidcAllowedUsers: list([], {
    doc: 'who may sign in: e-mail addresses (verified by the provider) or subject ids (sub); with allowed groups, either list admits',
  }),
  oidcAllowedGroups: list([], {
    doc: 'groups (values of the groups claim) whose members may sign in',
  }),
  oidcGroupsClaim: str('groups', {
    pattern: /^[A-Za-z0-9_.:/-]{1,128}$/,
    hint: 'a claim name (letters, digits, _ . : / -)',
    doc: 'claim holding the user groups, in the ID token or the userinfo answer (Keycloak: groups with a mapper; Authentik: groups)',
  }),
  oidcPendingLogins: int(10_000, {
    min: 10,
    max: 1_000_000,
    doc: 'sign-ins begun and not finished that all instances together keep per 10 minutes (each holds a few hundred bytes of shared state); past it /admin answers 429 (the per-client share is admin.rateLimit)',
  }),
  oidcSessionTtlMs: duration(8 * 3_600_000, {
    unit: 'ms',
    min: 60_000,
    max: 30 * 86_400_000,
    doc: 'how long an admin session lasts after sign-in (kept in the shared state, so every instance knows it)',
  }),
};

/** True when /admin and its JSON are on: a token, single sign-on, or both. */
export function adminEnabled(config: Config): boolean {
  const a = (config as Partial<Config>).admin;
  return Boolean(a && (a.token || a.oidcIssuer));
}

/** The admin token, or '' when the admin is off (or not among this server's utilities). */
export function adminToken(config: Config): string {
  return (config as Partial<Config>).admin?.token ?? '';
}
