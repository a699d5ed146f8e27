#!/usr/bin/env node
// The heavy extras (src/infra/config/extras.ts: development and optional peer dependencies, left out of the
// production install) outside the server. `node scripts/extras.js pinned` prints every extra at the
// version package-lock.json pins, for an install that wants them all (deploy/Dockerfile):
//   npm install --omit=dev --no-save --save-prod $(node scripts/extras.js pinned)
// `node scripts/extras.js prune` deletes the tables of the IP databases the server never reads (the
// packages ship their data twice: numeric CSVs beside the text ones, per-family .mmdb files beside the
// whole one); the prepare step runs it after every `npm install` and `npm ci`.
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Files of installed extras the server does not read (src/services/ip/geo.ts reads the others). */
export const UNREAD = [
  'node_modules/@ip-location-db/asn/asn-ipv4-num.csv',
  'node_modules/@ip-location-db/asn/asn-ipv6-num.csv',
  'node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country-ipv4.mmdb',
  'node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country-ipv6.mmdb',
];

export function prune(dir = root) {
  for (const f of UNREAD) rmSync(`${dir}/${f}`, { force: true });
}

export function pinned(dir = root) {
  const pkg = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
  const lock = JSON.parse(readFileSync(`${dir}/package-lock.json`, 'utf8'));
  return Object.keys(pkg.peerDependencies ?? {}).map(
    (name) => `${name}@${lock.packages[`node_modules/${name}`]?.version ?? pkg.peerDependencies[name]}`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cmd = process.argv[2];
  if (cmd === 'pinned') process.stdout.write(`${pinned().join(' ')}\n`);
  else if (cmd === 'prune') prune();
  else {
    process.stderr.write('usage: node scripts/extras.js pinned|prune\n');
    process.exit(2);
  }
}
