// Avatar section. DEVUTIL_AVATAR_HOST gives it its own virtual host; the rest are Gravatar-compatible
// serving, mirroring, generation-cache and upload limits (docs/avatar.md).
import { bool, bytes, duration, int, list, oneOf, rate, str, url } from '../../infra/config/schema.ts';

const DEFAULTS = ['mp', 'identicon', 'monsterid', 'wavatar', 'retro', 'robohash', 'blank', 'color'] as const;

/** `https://host/path-prefix`, `host/prefix` or `.suffix.host`: checked in redirect.ts. */
function allowItem(s: string): string | null {
  return /^(https?:\/\/)?\.?[a-z0-9.-]+(:\d+)?(\/\S*)?$/i.test(s)
    ? null
    : 'expected [https://]host[/path-prefix] or .domain-suffix';
}

export const avatarSection = {
  enabled: bool(true, { doc: 'serve Gravatar-compatible avatars under /avatar/' }),
  host: str('', { doc: 'Host header that routes every path to the avatar service' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public URL whose /avatar/<hash> serves avatars (default: http(s)://<host> or <public_url>)',
  }),
  upstream: str('https://secure.gravatar.com', {
    pattern: /^(none|https?:\/\/[^\s/?#]+(\/[^\s?#]*)?)$/,
    hint: 'an http(s) base URL or none',
    doc: 'Gravatar-compatible service mirrored for hashes not uploaded here (none = mirroring off)',
  }),
  upstreams: list([], {
    item: (s) => (/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(s) ? null : 'expected an http(s) base URL'),
    doc: 'Gravatar-compatible mirrors tried in this order, each skipped for error_ttl_sec after it fails (replaces upstream when set)',
  }),
  github: bool(true, {
    doc: 'serve /avatar/github/<user>: the GitHub account picture, mirrored like the others',
  }),
  githubUrl: str('https://github.com', {
    pattern: /^https?:\/\/[^\s/?#]+$/,
    hint: 'an http(s) origin',
    doc: 'where /avatar/github/<user> fetches <user>.png (GitHub Enterprise: its origin); uses the proxy egress settings (proxy.resolve, proxy.upstream_ca)',
  }),
  upstreamSize: int(512, { min: 16, max: 2048, doc: 'size fetched from the upstream once per hash' }),
  upstreamTimeoutMs: duration(4000, { unit: 'ms', min: 100, doc: 'give up on the upstream after this long' }),
  upstreamMaxBytes: bytes(4 * 1024 ** 2, { min: 1024, doc: 'largest upstream image accepted' }),
  mirrorMinTtlSec: duration(300, {
    unit: 's',
    min: 0,
    doc: 'shortest time a mirrored image is fresh, whatever max-age says',
  }),
  mirrorMaxTtlSec: duration(86_400, { unit: 's', min: 1, doc: 'longest time a mirrored image is fresh' }),
  staleSec: duration(7 * 86_400, {
    unit: 's',
    min: 0,
    doc: 'after expiry, serve the cached copy at once and refresh it in the background this long',
  }),
  missTtlSec: duration(300, {
    unit: 's',
    min: 0,
    doc: 'how long an upstream "no such avatar" is remembered',
  }),
  errorTtlSec: duration(30, { unit: 's', min: 0, doc: 'how long an upstream failure stops further tries' }),
  maxAgeSec: duration(60, {
    unit: 's',
    min: 0,
    doc: 'Cache-Control max-age of avatar responses, then browsers revalidate (304) (Gravatar: 300)',
  }),
  lookupTtlSec: duration(10, {
    unit: 's',
    min: 0,
    doc: 'how long an instance remembers whether a hash has an upload; with Redis every change reaches all instances at once and this only bounds a lost message',
  }),
  storeTimeoutMs: duration(1500, {
    unit: 'ms',
    min: 1,
    doc: 'how long a lookup of uploaded avatars in the blob store may take; past it, or when the store fails, the mirror or the generated default is served (generated avatars need no store)',
  }),
  default: oneOf('mp', DEFAULTS, { doc: 'image served when no d= is given or d= is not usable' }),
  redirectAllow: list([], {
    item: allowItem,
    doc: 'd=<url> targets answered with a 302: https://host/prefix, host/prefix or .domain (else the built-in default)',
  }),
  adminToken: str('', {
    secret: true,
    doc: 'Bearer token for PUT/DELETE /avatar/<hash> uploads (empty = uploads off)',
  }),
  uploadMaxBytes: bytes(10 * 1024 ** 2, { min: 1024, doc: 'largest uploaded image' }),
  maxInputPixels: int(50_000_000, { min: 1, doc: 'largest decoded image (width x height) accepted' }),
  memCacheBytes: bytes(64 * 1024 ** 2, { min: 0, doc: 'in-memory cache of encoded avatars' }),
  diskCacheBytes: bytes(512 * 1024 ** 2, {
    min: 0,
    doc: 'disk cache of rendered avatars and, as much again, of mirrored originals (least recently used go first; 0 = none, and no mirroring)',
  }),
  renderConcurrency: int(4, { min: 1, max: 64, doc: 'images rendered at once' }),
  renderQueue: int(256, { min: 0, doc: 'renders waiting for a slot before 503' }),
  clientShare: int(50, {
    min: 1,
    max: 100,
    doc: 'percent of the render slots and of the queue one client (IPv6: its /64) may hold; 100 = no cap',
  }),
  rateLimit: rate('off', { doc: 'per-client budget for avatar requests, e.g. 600/min' }),
  adminRateLimit: rate('60/min', { doc: 'per-client budget for PUT/DELETE (also slows token guessing)' }),
};
