// The one real file setup.sh fetches through devutil for each tool before it changes that tool's
// config: devutil answering is not enough (a network may let it answer and still keep it from its
// upstreams, and apt pointed at it would then fail until --undo). Each is small and long-lived at
// its real upstream; the fixtures of test/fixtures/proxy/ serve the same paths.
import type { Tool } from './script.ts';

export interface Probe {
  /** The file at its real upstream (what the fixtures serve). */
  upstream: string;
  /** Its path below the URL the tool is given (GIT_URL, PIP_URL, ...). */
  below: string;
  /** HEAD instead of GET: Docker Hub counts manifest GETs against its pull limit, not HEADs. */
  head?: boolean;
  /** One request header, `Name: value`. */
  header?: string;
}

export const PROBES: Record<Exclude<Tool, 'apt' | 'relay'>, Probe> = {
  // Protocol v2: the answer is the server's capabilities (a few hundred bytes), not every ref.
  git: {
    upstream: 'https://github.com/git/git.git/info/refs?service=git-upload-pack',
    below: 'git/git.git/info/refs?service=git-upload-pack',
    header: 'Git-Protocol: version=2',
  },
  pip: { upstream: 'https://pypi.org/simple/pip/', below: '/pip/' },
  // What `npm ping` asks.
  npm: { upstream: 'https://registry.npmjs.org/-/ping', below: '-/ping' },
  go: { upstream: 'https://proxy.golang.org/rsc.io/quote/@v/list', below: '/rsc.io/quote/@v/list' },
  hf: {
    upstream: 'https://huggingface.co/api/models/openai-community/gpt2',
    below: '/api/models/openai-community/gpt2',
  },
  docker: {
    upstream: 'https://registry-1.docker.io/v2/library/hello-world/manifests/latest',
    below: '/v2/library/hello-world/manifests/latest',
    head: true,
    header:
      'Accept: application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json',
  },
};

/** apt's, by the Debian host its sources name (the first one this instance serves is asked). */
export const APT_PROBES: Record<string, string> = {
  'deb.debian.org': '/debian/README',
  'security.debian.org': '/debian-security/dists/stable-security/Release',
};
