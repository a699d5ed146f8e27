// Container registries (OCI distribution) pulled through the proxy: the path form
// HOST/<registry>/<name> and, for Docker Hub, the bare-host mirror form.
import { defineEcosystem, type SetupInput, type SetupLine } from '../define.ts';
import { ociEnvelope } from './errors.ts';

/**
 * Where clients reach the registry API: container clients name a registry by host (and port)
 * alone and always ask for /v2/ at its root, so this is the proxy's own host when it has one
 * (a public URL without a path), else the base URL's.
 */
export function registryHost(urls: { base: string; proxy: string }): string {
  const p = new URL(urls.proxy);
  return p.pathname === '/' || p.pathname === '' ? p.host : new URL(urls.base).host;
}

function setup(p: SetupInput): SetupLine[] {
  const host = registryHost(p.urls);
  const origin = `${new URL(p.urls.base).protocol}//${host}`;
  const scheme = new URL(p.urls.proxy).protocol === 'http:' && new URL(p.urls.base).protocol === 'http:';
  const lines: SetupLine[] = [
    {
      label: 'Pull by path (docker, podman, skopeo, crane)',
      text: `docker pull ${host}/docker.io/library/alpine:3.20\npodman pull ${host}/ghcr.io/<owner>/<image>:<tag>`,
    },
    { label: 'Docker Hub mirror (/etc/docker/daemon.json)', text: `{ "registry-mirrors": ["${origin}"] }` },
    {
      label: 'containerd (/etc/containerd/certs.d/docker.io/hosts.toml)',
      text: `server = "https://registry-1.docker.io"\n\n[host."${origin}"]\n  capabilities = ["pull", "resolve"]`,
    },
    {
      label: 'podman, CRI-O (/etc/containers/registries.conf)',
      text: `[[registry]]\nprefix = "docker.io"\nlocation = "docker.io"\n\n[[registry.mirror]]\nlocation = "${host}"${scheme ? '\ninsecure = true' : ''}`,
    },
  ];
  if (p.config.proxy.secret)
    lines.push({
      label: 'This proxy is private: log in first',
      text: `docker login ${host} -u any -p <SECRET>`,
    });
  return lines;
}

export const ociEcosystem = defineEcosystem({
  name: 'oci',
  title: 'Container registries',
  summary:
    'Docker Hub, ghcr.io, quay.io, registry.k8s.io, gcr.io and mcr.microsoft.com for docker, podman, containerd and skopeo; layers cached by digest and verified.',
  paths: ['/v2'],
  atRoot: true,
  ownAccess: true,
  envelope: ociEnvelope,
  load: () => import('./index.ts'),
  setup,
});
