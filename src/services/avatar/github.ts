// /avatar/github/<user>: a GitHub account's picture (hunshcn/gh-proxy#60), fetched once from
// `<github>/<user>.png`, which redirects to avatars.githubusercontent.com, and kept in the avatar
// mirror's store like any mirrored original, then resized and re-encoded like them.
import type { MirrorOptions } from './mirror.ts';

/** GitHub logins: letters, digits and single inner hyphens, at most 39 characters. */
const LOGIN = /^[a-z\d](?:[a-z\d]|-(?=[a-z\d])){0,38}$/i;

/** The lower-cased login (GitHub's are case-insensitive, so one cache entry each), or null. */
export function parseLogin(text: string): string | null {
  return LOGIN.test(text) ? text.toLowerCase() : null;
}

/** GitHub's avatar CDN: the only place the `.png` redirect may lead besides the configured host. */
const CDN = 'avatars.githubusercontent.com';

/** The mirror settings that make it fetch GitHub pictures from `base` (https://github.com). */
export function githubSource(
  base: string,
): Pick<MirrorOptions, 'upstreams' | 'requestUrl' | 'followRedirect' | 'keyPrefix'> {
  const home = new URL(base);
  return {
    upstreams: [base.replace(/\/+$/, '')],
    requestUrl: (b, login, _rating, size) => new URL(`${b}/${login}.png?size=${size}`),
    followRedirect: (to) => to.protocol === home.protocol && (to.host === home.host || to.hostname === CDN),
    keyPrefix: 'github:',
  };
}
