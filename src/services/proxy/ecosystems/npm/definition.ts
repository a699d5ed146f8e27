// The npm registry profile: `npm config set registry {proxy_url}/npm/`.
import { defineEcosystem } from '../define.ts';

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
  setup: ({ proxy }) => [
    { label: 'npm (every project of this user)', text: `npm config set registry ${proxy}/npm/` },
    { label: 'One install', text: `npm install --registry ${proxy}/npm/ <package>` },
    {
      label: 'pnpm, Yarn 1',
      text: `pnpm config set registry ${proxy}/npm/\nyarn config set registry ${proxy}/npm/`,
    },
    { label: 'Yarn 2+ (.yarnrc.yml)', text: `npmRegistryServer: "${proxy}/npm/"` },
  ],
});
