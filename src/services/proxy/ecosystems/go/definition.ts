// The Go modules profile: `GOPROXY={proxy_url}/go`, the checksum database through it.
import { ENVELOPES } from '../../../../infra/http/envelopes.ts';
import { defineEcosystem, type SetupInput } from '../define.ts';

const goproxy = (p: SetupInput): string => `${p.proxy}/go`;

export const goEcosystem = defineEcosystem({
  name: 'go',
  title: 'Go modules',
  summary:
    'The go command fetches modules through this server (versions cached as immutable) and verifies them against the checksum database through it too, so GOSUMDB keeps its default. The upstream proxy is DEVUTIL_PROXY_GO_PROXY.',
  paths: ['/go'],
  // Module proxies answer errors in plain text; the go command prints it.
  envelope: ENVELOPES.text,
  load: () => import('./index.ts'),
  setup: (p) => [
    { label: 'Go (this user)', text: `go env -w GOPROXY=${goproxy(p)}` },
    { label: 'Go (one shell or CI job)', text: `export GOPROXY=${goproxy(p)}` },
  ],
  script: { tool: 'go', url: goproxy },
});
