// Settings of the container registry profile (DEVUTIL_PROXY_OCI_*), spread into the proxy section.
import { bytes, duration, list, str } from '../../../../infra/config/schema.ts';

/**
 * Registries served, `name` or `name=upstream host` (the name is what clients write first in an
 * image reference: docker.io/library/alpine). docker.io is also the bare-host mirror's registry.
 */
export const DEFAULT_REGISTRIES = [
  'docker.io=registry-1.docker.io',
  'ghcr.io',
  'quay.io',
  'registry.k8s.io',
  'gcr.io',
  'mcr.microsoft.com',
];

/**
 * Hosts the registries send clients to besides themselves: token realms and blob storage (Docker
 * Hub's auth and CDN, GitHub's package storage, Quay's CDN, Google's Artifact Registry and storage,
 * the S3 buckets behind registry.k8s.io and Quay, MCR's regional data hosts). Blobs from them are
 * verified against their digest like any other.
 */
export const DEFAULT_OCI_ALLOW = [
  'auth.docker.io',
  'production.cloudflare.docker.com',
  '*.r2.cloudflarestorage.com',
  'pkg-containers.githubusercontent.com',
  '*.quay.io',
  '*.pkg.dev',
  'storage.googleapis.com',
  '*.storage.googleapis.com',
  '*.amazonaws.com',
  '*.data.mcr.microsoft.com',
];

const HOST = /^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)+$/;

function registryItem(s: string): string | null {
  const [name = '', upstream, ...rest] = s.toLowerCase().split('=');
  if (
    rest.length ||
    !HOST.test(name) ||
    name.startsWith('*.') ||
    (upstream !== undefined && (!HOST.test(upstream) || upstream.startsWith('*.')))
  )
    return 'expected a registry host name, or name=upstream host';
  return null;
}

export const ociFields = {
  ociRegistries: list(DEFAULT_REGISTRIES, {
    item: registryItem,
    doc: 'container registries served (oci profile): name or name=upstream host; docker.io is the bare-host mirror',
  }),
  ociAllow: list(DEFAULT_OCI_ALLOW, {
    item: (s) => (HOST.test(s.toLowerCase()) ? null : 'expected a host name or *.domain'),
    doc: 'other hosts the registries may send devutil to: token realms, blob storage (*.x for subdomains)',
  }),
  ociTagTtlSec: duration(120, {
    unit: 's',
    min: 0,
    doc: 'how long a manifest fetched by tag is served before the registry is asked again (a HEAD)',
  }),
  ociMaxManifestBytes: bytes(4 * 1024 ** 2, {
    min: 1024,
    doc: 'largest manifest or index accepted from a registry',
  }),
  ociDockerhubUser: str('', {
    doc: 'Docker Hub account for authenticated pulls (higher rate limit); needs ..._TOKEN',
  }),
  ociDockerhubToken: str('', {
    secret: true,
    doc: 'Docker Hub access token of that account (a public-repositories read-only token: everything it can read, every client of this proxy can)',
  }),
};
