// Regenerates the configuration table in docs/configuration.md from the one schema (npm run docs:config).
import { readFileSync, writeFileSync } from 'node:fs';
import { configReference } from '../src/config.ts';
import type { ServiceDef } from '../src/services/define.ts';
import { SERVICES } from '../src/services/index.ts';

const PAGE = new URL('../docs/configuration.md', import.meta.url);
const START = '<!-- config-reference:start -->';
const END = '<!-- config-reference:end -->';

/** A default as it is written in env or a file (configReference gives sizes, durations, rates so). */
function show(v: unknown): string {
  if (Array.isArray(v)) return v.length ? v.join(',') : '(empty)';
  if (v === '') return '(empty)';
  return String(v);
}

export function referenceTable(): string {
  const rows = ['| env | file key | default | meaning |', '|---|---|---|---|'];
  const former = new Map<string, string>();
  for (const d of SERVICES as readonly ServiceDef[]) if (d.formerly) former.set(d.name, d.formerly);
  const told = new Set<string>();
  for (const r of configReference()) {
    const old = former.get(r.section);
    // A renamed section says so once, above its first key, rather than on every key.
    if (old !== undefined && !told.has(r.section)) {
      told.add(r.section);
      rows.push(
        `| \`DEVUTIL_${r.section.toUpperCase()}_*\` | \`${r.section}.*\` | | every key below was \`DEVUTIL_${old.toUpperCase()}_*\` (file section \`${old}\`): the old names are still read, with a warning naming the new one |`,
      );
    }
    const bySection = old !== undefined && r.formerly?.startsWith(`DEVUTIL_${old.toUpperCase()}_`);
    const was = r.formerly && !bySection ? ` (formerly \`${r.formerly}\`, still read with a warning)` : '';
    const also = r.fallbackEnv
      ? ` (when nothing sets it: the first of ${r.fallbackEnv.map((n) => `\`${n}\``).join(', ')} that is set)`
      : '';
    const doc = `${r.doc}${was}${also}`.replace(/\|/g, '\\|');
    // A default computed on this machine is stated in words: the page must not depend on who ran this.
    const def = r.shownDefault ?? `\`${show(r.default).replace(/\|/g, '\\|')}\``;
    rows.push(`| \`${r.env}\` | \`${r.section}.${r.key}\` | ${def} | ${doc} |`);
  }
  return rows.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = readFileSync(PAGE, 'utf8');
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a === -1 || b === -1) throw new Error('docs/configuration.md has no config-reference markers');
  writeFileSync(PAGE, `${text.slice(0, a + START.length)}\n${referenceTable()}\n${text.slice(b)}`);
  console.log('docs/configuration.md configuration reference updated');
}
