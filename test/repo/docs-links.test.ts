// README.md is a landing page (at most 350 lines; the reference lives in docs/), and every relative
// link in README.md and docs/**/*.md leads somewhere: the file exists and, with a #fragment, the
// target page has a heading (or an explicit id) with that GitHub anchor.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;
const MAX_README_LINES = 350;

/** Text with code spans and fenced blocks blanked: they show link syntax, they do not link. */
function prose(markdown: string): string {
  return markdown
    .replace(/```[\s\S]*?```/g, (c) => c.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (c) => ' '.repeat(c.length));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a Markdown page defines: its headings (repeats get -1, -2, ...) and explicit ids. */
export function anchorsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  const text = markdown.replace(/```[\s\S]*?```/g, '');
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1] ?? '');
  return out;
}

/** Relative links of a page that lead nowhere, as "path:line: target (why)". */
export function brokenLinks(path: string, markdown: string, read: (p: string) => string | null): string[] {
  const bad: string[] = [];
  const text = prose(markdown);
  for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const link = m[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
    const [file = '', fragment] = link.split('#');
    const target = file ? join(dirname(path), file) : path;
    const at = `${path}:${text.slice(0, m.index).split('\n').length}: ${link}`;
    const body = read(target);
    if (body === null) {
      bad.push(`${at} (no such file)`);
      continue;
    }
    if (fragment && target.endsWith('.md') && !anchorsOf(body).has(decodeURIComponent(fragment)))
      bad.push(`${at} (no such anchor)`);
  }
  return bad;
}

function markdownUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const p = join(dir, name);
    if (statSync(join(ROOT, p)).isDirectory()) out.push(...markdownUnder(p));
    else if (name.endsWith('.md')) out.push(p);
  }
  return out;
}

const readRepo = (p: string): string | null => {
  const abs = join(ROOT, p);
  if (relative(ROOT, abs).startsWith('..') || !existsSync(abs)) return null;
  return statSync(abs).isDirectory() ? '' : readFileSync(abs, 'utf8');
};

describe('README and docs links', { timeout: 30_000 }, () => {
  it(`keeps README.md a landing page of at most ${MAX_README_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    assert.ok(lines <= MAX_README_LINES, `README.md has ${lines} lines: move the reference into docs/`);
  });

  it('links from README.md and docs/ only to files and anchors that exist', () => {
    const pages = ['README.md', ...markdownUnder('docs')];
    assert.ok(pages.includes('docs/configuration.md') && pages.length > 10, 'the pages were found');
    const bad = pages.flatMap((p) => brokenLinks(p, readFileSync(join(ROOT, p), 'utf8'), readRepo));
    assert.deepEqual(bad, []);
  });

  it('finds a missing file, a missing anchor and a heading anchor (the check can fail)', () => {
    const pages: Record<string, string> = {
      'guide/a.md': '# A page\n\n## Lean install\n\n## `npm ci` and S3: presigned\n\n## Lean install\n',
    };
    const read = (p: string) => pages[p] ?? null;
    const doc = [
      '[ok](a.md#lean-install) [ok](a.md#lean-install-1) [ok](a.md#npm-ci-and-s3-presigned)',
      '[self](#a-page) [gone](b.md) [no anchor](a.md#lean) `[code](c.md)` [web](https://x.test/#y)',
    ].join('\n');
    assert.deepEqual(brokenLinks('guide/a.md', `# A page\n${doc}`, read), [
      'guide/a.md:3: b.md (no such file)',
      'guide/a.md:3: a.md#lean (no such anchor)',
    ]);
  });
});
