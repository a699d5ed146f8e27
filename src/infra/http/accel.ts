// Offload behind nginx (X-Accel-Redirect): the config field of each utility that offers it. The
// value is an nginx `internal` location prefix aliasing a directory of body-only files; nginx then
// sends the file itself (sendfile, Range) with devutil's headers (deploy/nginx.conf, docs/deployment.md).
import { type Field, str } from '../config/schema.ts';

/** Absolute, ending in "/", URL-safe characters only. */
const PREFIX = /^\/(?:[A-Za-z0-9._~-]+\/)+$/;

export function accelPrefix(doc: string): Field<string> {
  return str('', {
    pattern: PREFIX,
    hint: 'an nginx internal location prefix such as /_devutil_files/ (starts and ends with /)',
    doc: `${doc}; empty = off`,
  });
}
