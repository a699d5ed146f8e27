// Maven repository mount: Maven's mirror URL, Gradle's repository URL `{proxy_url}/maven/`. Release
// files never change once published (docs/protocols/maven.md §2), so they are cached as
// immutable; maven-metadata.xml, the archetype catalogue and snapshot files are revalidated.
// Deploying is refused (the mount is read-only).
import { check, route } from '../../policy.ts';
import type { UpstreamProfile } from '../upstream.ts';
import { parseMavenPath } from './paths.ts';

function repositoryOf(cfg: { mavenRepository: string }): URL {
  return new URL(`${cfg.mavenRepository}/`);
}

/** The checksum and signature files beside an artifact: no download of their own on the dashboard. */
const SIDE_FILE = /\.(md5|sha1|sha256|sha512|asc)$/;

export const mavenProfile: UpstreamProfile = {
  hosts: (cfg) => [repositoryOf(cfg).hostname],
  origins: (cfg) => [repositoryOf(cfg).href],
  target(_method, rest, cfg) {
    const req = parseMavenPath(rest);
    const repo = repositoryOf(cfg);
    const url = new URL(repo.pathname.replace(/\/$/, '') + req.path, repo.origin);
    const immutable = req.kind === 'file' && !req.snapshot;
    return { url, route: route({ cache: immutable ? 'immutable' : 'revalidate' }) };
  },
  decide(host, method, _url, cfg) {
    // The repository reached through the path form or a redirect: read-only, uncached.
    return host === repositoryOf(cfg).hostname ? check(method, route({})) : null;
  },
  subjects(url, cfg) {
    const repo = repositoryOf(cfg);
    if (url.hostname !== repo.hostname) return undefined;
    try {
      const req = parseMavenPath(url.pathname.slice(repo.pathname.length - 1));
      if (req.kind !== 'file') return undefined;
      const pkg = `maven/${req.group}:${req.artifact}`;
      return {
        package: pkg,
        file: SIDE_FILE.test(req.file) ? undefined : `${pkg}/${req.version}/${req.file}`,
      };
    } catch {
      return undefined;
    }
  },
};
