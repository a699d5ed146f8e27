// Where a Chromium is, for the Mermaid browser pool when the operator named none: looked up once at
// start-up by file checks only (no process is started; the pool stays lazy), on PATH first, then in
// the places distributions and Google's packages put it. A headless shell (Chromium's headless
// build without the browser's window, tabs and omnibox: Debian's chromium-headless-shell, Google's
// chrome-headless-shell) comes first: it draws the same pages with about 130 MiB less (chromium.ts).
// Debian's /usr/bin/chromium-headless-shell is a shell script that runs the binary as its child, so
// the binary itself is named (the parent-death signal must reach the browser).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'chrome'];
const SHELL_NAMES = ['chrome-headless-shell'];
const SHELL_PLACES = ['/usr/lib/chromium/chromium-headless-shell'];
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

/**
 * The first headless shell on `path` or in `shellPlaces`, else the first Chromium/Chrome executable
 * on `path` or in `places`, or null.
 */
export function findChromium(
  path = process.env['PATH'] ?? '',
  places = PLACES,
  shellPlaces = SHELL_PLACES,
): string | null {
  const dirs = path.split(delimiter).filter((d) => d.startsWith('/'));
  const onPath = (names: string[]) => {
    for (const name of names) for (const dir of dirs) if (executable(join(dir, name))) return join(dir, name);
    return null;
  };
  return (
    onPath(SHELL_NAMES) ?? shellPlaces.find(executable) ?? onPath(NAMES) ?? places.find(executable) ?? null
  );
}
