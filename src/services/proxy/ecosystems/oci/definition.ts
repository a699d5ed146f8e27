// Container registries (OCI distribution) pulled through the proxy: the path form
// HOST/<registry>/<name> and, for Docker Hub, the bare-host mirror form.
import { defineEcosystem, type SetupInput, type SetupLine } from '../define.ts';
import { ociEnvelope } from './envelope.ts';

/**
 * Where clients reach the registry API: container clients name a registry by host (and port)
 * alone and always ask for /v2/ at its root, so this is the proxy's own host when it has one
 * (a public URL without a path), else the base URL's. From config, never from a request.
 */
export function registryOrigin(urls: { base: string; proxy: string }): { host: string; origin: string } {
  const p = new URL(urls.proxy);
  const u = p.pathname === '/' || p.pathname === '' ? p : new URL(urls.base);
  return { host: u.host, origin: `${u.protocol}//${u.host}` };
}

function setup(p: SetupInput): SetupLine[] {
  const { host, origin } = registryOrigin(p.urls);
  const plain = origin.startsWith('http:');
  const lines: SetupLine[] = [
    {
      label: 'Pull by path, any registry (docker, podman, skopeo, crane)',
      text: `docker pull ${host}/docker.io/library/alpine:3.20
podman pull ${host}/ghcr.io/<owner>/<image>:<tag>`,
    },
    {
      label: 'Docker Hub mirror (/etc/docker/daemon.json)',
      text: plain
        ? `{\n  "registry-mirrors": ["${origin}"],\n  "insecure-registries": ["${host}"]\n}`
        : `{ "registry-mirrors": ["${origin}"] }`,
    },
    {
      label: 'containerd (/etc/containerd/certs.d/docker.io/hosts.toml)',
      text: `server = "https://registry-1.docker.io"\n\n[host."${origin}"]\n  capabilities = ["pull", "resolve"]`,
    },
    {
      label: 'podman, CRI-O (/etc/containers/registries.conf)',
      text: `[[registry]]\nprefix = "docker.io"\nlocation = "docker.io"\n\n[[registry.mirror]]\nlocation = "${host}"${plain ? '\ninsecure = true' : ''}`,
    },
  ];
  if (p.config.proxy.secret)
    lines.push({
      label: 'This mirror is private: log in with its password first',
      text: `echo '<SECRET>' | docker login ${host} -u any --password-stdin`,
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
  // Docker's registry-mirrors entry (Docker Hub only; other registries are pulled by path).
  script: { tool: 'docker', url: (p) => registryOrigin(p.urls).origin },
});
