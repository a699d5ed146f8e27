// Where a Chromium is, for the Mermaid browser pool when the operator named none: looked up once at
// start-up by file checks only (no process is started; the pool stays lazy), on PATH first, then in
// the places distributions and Google's packages put it.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'chrome'];
const PLACES = [
  '/usr/lib/chromium/chromium',
  '/usr/lib/chromium-browser/chromium-browser',
  '/snap/bin/chromium',
  '/opt/google/chrome/chrome',
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first Chromium/Chrome executable on `path` or in the usual places, or null. */
export function findChromium(path = process.env['PATH'] ?? '', places = PLACES): string | null {
  const dirs = path.split(delimiter).filter((d) => d.startsWith('/'));
  for (const name of NAMES) for (const dir of dirs) if (executable(join(dir, name))) return join(dir, name);
  return places.find(executable) ?? null;
}
