// The Maven repository layout the mount serves (docs/protocols/maven.md §1), read from the raw request
// path: release and snapshot files under <group path>/<artifact>/<version>/ (artifacts, POMs,
// Gradle module files, their checksums and signatures), maven-metadata.xml at any level, the
// archetype catalogue and the prefix file repository filters read. Anything else, and any byte a
// coordinate never holds, is refused here with the reason.
import { MountError } from '../mount-error.ts';

export type MavenRequest =
  | {
      kind: 'file';
      /** The path as asked (a group part may hold dots: it is never rebuilt from the coordinates). */
      path: string;
      group: string;
      artifact: string;
      version: string;
      file: string;
      /** A -SNAPSHOT version: its files are replaced in place (timestamped builds, metadata). */
      snapshot: boolean;
    }
  | { kind: 'metadata'; path: string };

// groupId parts, artifactIds, versions and file names: letters, digits and . _ - + ~ (no
// coordinate on Central holds anything else); never `.` or `..` alone, never a leading dot.
const SEGMENT = /^[A-Za-z0-9_+~-][A-Za-z0-9._+~-]{0,199}$/;
const METADATA = /^maven-metadata\.xml(\.(md5|sha1|sha256|sha512|asc))?$/;
const ROOT_FILES = /^\/(archetype-catalog\.xml|\.meta\/prefixes\.txt)(\.(md5|sha1|sha256|sha512))?$/;
const MAX_SEGMENTS = 32;

export function parseMavenPath(rest: string): MavenRequest {
  // The layout has no query strings and no escapes: a client that sends one is not a build tool.
  if (rest.includes('?')) throw new MountError(400, 'query strings are not part of the repository layout');
  if (rest.includes('%'))
    throw new MountError(400, 'percent-encoded bytes are not valid in a repository path');
  if (ROOT_FILES.test(rest)) return { kind: 'metadata', path: rest };
  if (rest.endsWith('/')) throw new MountError(404, 'directory listings are not served');
  const seg = rest.slice(1).split('/');
  if (seg.length > MAX_SEGMENTS) throw new MountError(400, 'repository path is too deep');
  for (const s of seg)
    if (!SEGMENT.test(s)) throw new MountError(400, `invalid path segment: ${s.slice(0, 80)}`);
  const file = seg[seg.length - 1] as string;
  // maven-metadata.xml: of a group (plugin prefixes), of an artifact (its versions), of a
  // snapshot version (its timestamped builds). It changes as releases are published.
  if (METADATA.test(file)) {
    if (seg.length < 2) throw new MountError(404, 'not found');
    return { kind: 'metadata', path: rest };
  }
  if (seg.length < 4) throw new MountError(404, 'not a file of the repository layout');
  const version = seg[seg.length - 2] as string;
  const artifact = seg[seg.length - 3] as string;
  const group = seg.slice(0, -3).join('.');
  // <artifact>-<version>[-<classifier>].<ext>; a snapshot's builds replace SNAPSHOT with a
  // timestamp and build number (1.0-20240102.030405-7).
  const snapshot = version.endsWith('-SNAPSHOT');
  const stem = `${artifact}-${snapshot ? version.slice(0, -'SNAPSHOT'.length) : version}`;
  const after = file.slice(stem.length);
  const named = file.startsWith(stem) && (snapshot ? after.length > 0 : after[0] === '.' || after[0] === '-');
  if (!named) throw new MountError(404, `not a file of ${group}:${artifact}:${version}`);
  return { kind: 'file', path: rest, group, artifact, version, file, snapshot };
}
