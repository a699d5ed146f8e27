// The npm registry profile: `npm config set registry {proxy_url}/npm/`.
import { defineEcosystem, type SetupInput } from '../define.ts';

const registry = (p: SetupInput): string => `${p.proxy}/npm/`;

export const npmEcosystem = defineEcosystem({
  name: 'npm',
  title: 'npm registry',
  summary:
    'npm, pnpm and Yarn install through this server: package metadata is revalidated and its tarball links point here, tarballs are cached as immutable. The upstream registry is DEVUTIL_PROXY_NPM_REGISTRY.',
  paths: ['/npm'],
  envelope: {
    contentType: 'application/json; charset=utf-8',
    // The registry's own error shape: npm prints `error` after the status.
    body: (_s, m) => JSON.stringify({ error: m }),
  },
  load: () => import('./index.ts'),
  setup: (p) => {
    const r = registry(p);
    return [
      { label: 'npm (every project of this user)', text: `npm config set registry ${r}` },
      { label: 'One install', text: `npm install --registry ${r} <package>` },
      { label: 'pnpm, Yarn 1', text: `pnpm config set registry ${r}\nyarn config set registry ${r}` },
      { label: 'Yarn 2+ (.yarnrc.yml)', text: `npmRegistryServer: "${r}"` },
    ];
  },
  script: { tool: 'npm', url: registry },
});
