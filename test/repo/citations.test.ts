// Every document a comment or doc relies on is in the repository: no citation of notes that live
// elsewhere (a protocol "digest", the interface "seed", a conventions file, a shared folder), every
// `docs/protocols/<note>.md §N` names a note and a section that exist, every relative Markdown link
// resolves, and every repository path a comment or doc names is there. What the code relies on
// about the outside world is written in docs/protocols/ (its README says how to cite it).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;
// By its source's name: on Node 20 the test runner runs this file's compiled copy, a .js.
const SELF = relative(ROOT, new URL(import.meta.url).pathname).replace(/\.js$/, '.ts');

/** Citations of documents that are not in this repository, whatever they are called. */
export const OUTSIDE: readonly { why: string; re: RegExp }[] = [
  { why: 'a protocol or spec "digest"', re: /\b(?:spec(?:ification)?|protocol|implementer'?s?)\s+digest\b/i },
  { why: 'a section of a "digest"', re: /\bdigest\s*(?:§|section\s*\d|sec\.\s*\d|s\.\s*\d)/i },
  {
    why: 'the "digest" as a document',
    re: /\b(?:the|this|that)\s+digest'?s?\s+(?:example|says|allows|shows|table|rules?|notes?)\b/i,
  },
  { why: 'a section of the interface "seed"', re: /\bseed\s*(?:§\s*)?\d+\.\d+/i },
  { why: 'the interface "seed"', re: /\bseed\s+(?:interface|spec(?:ification)?)\b|service-interface-spec/i },
  { why: 'an unnamed "spec" section', re: /\bspec\s*§/i },
  { why: 'an unnamed "spec"', re: /\bthe spec(?:'s)?\s+(?:test|vectors?|examples?|says|table|section)\b/i },
  { why: 'the conventions file outside the repository', re: /\bCONVENTIONS(?:\.md)?\b/ },
  {
    why: 'the shared folder outside the repository',
    re: /(?:\.\.\/)+shared\/|\/work\/shared\b|\bshared\/(?:specs|seed)\b/,
  },
  { why: 'a spec file outside the repository', re: /\bspecs\/[\w-]+\.md\b/ },
];

/** Tracked and new files, without the lock file, built output and binary files. */
function repoTextFiles(): { path: string; text: string }[] {
  const names = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter((f) => f && f !== 'package-lock.json' && !f.startsWith('web/dist/'));
  const out: { path: string; text: string }[] = [];
  for (const path of names) {
    let buf: Buffer;
    try {
      buf = readFileSync(join(ROOT, path));
    } catch {
      continue; // deleted in the work tree, not yet committed
    }
    if (buf.subarray(0, 8000).includes(0)) continue;
    out.push({ path, text: buf.toString('utf8') });
  }
  return out;
}

/** Section numbers a note defines: headings `## 3. Title`, `### 5.4 Title` and paragraphs `5.4 ...`. */
export function sectionsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const line of markdown.split('\n')) {
    const m = /^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s/.exec(line) ?? /^(\d+\.\d+)\s/.exec(line);
    if (m?.[1]) out.add(m[1]);
  }
  return out;
}

/** `<note>.md §N` citations in a text: the note as written and each section cited after it. */
export function sectionCitations(text: string): { note: string; sections: string[] }[] {
  const out: { note: string; sections: string[] }[] = [];
  const re = /((?:[\w.-]+\/)*[\w-]+\.md)((?:[\s,;]*(?:and\s+|-\s*|to\s+)?§\s*\d+(?:\.\d+)*)+)/g;
  for (const m of text.matchAll(re)) {
    const sections = [...(m[2] ?? '').matchAll(/§\s*(\d+(?:\.\d+)*)/g)].map((s) => s[1] ?? '');
    out.push({ note: m[1] ?? '', sections });
  }
  return out;
}

/** Where a cited note is: from the repository root, beside the citing file, or in docs/protocols/. */
function resolveNote(from: string, note: string): string | null {
  for (const p of [note, join(dirname(from), note), join('docs/protocols', note)])
    if (existsSync(join(ROOT, p))) return p;
  return null;
}

const files = repoTextFiles().filter((f) => f.path !== SELF);
const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

describe('citations', { timeout: 60_000 }, () => {
  it('reads the repository (a broken file listing cannot pass)', () => {
    assert.ok(files.some((f) => f.path === 'src/server.ts'));
    assert.ok(files.some((f) => f.path === 'docs/protocols/README.md'));
  });

  it('cite no document that lives outside the repository', () => {
    const bad: string[] = [];
    for (const f of files) {
      const lines = f.text.split('\n');
      lines.forEach((line, i) => {
        for (const { why, re } of OUTSIDE) {
          const m = re.exec(line);
          if (m) bad.push(`${f.path}:${i + 1}: "${m[0]}" (${why})`);
        }
      });
    }
    assert.deepEqual(bad, [], 'write what the code relies on into docs/protocols/ and cite that');
  });

  it('name notes and sections that exist when they cite "<note>.md §N"', () => {
    const bad: string[] = [];
    const sections = new Map<string, Set<string>>();
    for (const f of files) {
      for (const c of sectionCitations(f.text)) {
        const at = `${f.path}:${lineOf(f.text, f.text.indexOf(c.note))}`;
        const note = resolveNote(f.path, c.note);
        if (!note) {
          bad.push(`${at}: ${c.note} is not in the repository`);
          continue;
        }
        let known = sections.get(note);
        if (!known) {
          known = sectionsOf(readFileSync(join(ROOT, note), 'utf8'));
          sections.set(note, known);
        }
        for (const s of c.sections) if (!known.has(s)) bad.push(`${at}: ${note} has no §${s}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it('link only to files that exist (relative Markdown links)', () => {
    const bad: string[] = [];
    for (const f of files.filter((x) => x.path.endsWith('.md'))) {
      // Code spans and fenced blocks show link syntax; they do not link.
      const prose = f.text
        .replace(/```[\s\S]*?```/g, (c) => c.replace(/[^\n]/g, ' '))
        .replace(/`[^`\n]*`/g, (c) => ' '.repeat(c.length));
      for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = (m[1] ?? '').split('#')[0] ?? '';
        if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        if (!existsSync(join(ROOT, dirname(f.path), target)))
          bad.push(`${f.path}:${lineOf(f.text, m.index ?? 0)}: ${m[1]}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it('name only repository files that exist (src/, test/, docs/, ... paths in comments and docs)', () => {
    const bad: string[] = [];
    const re =
      /(?<![\w./-])((?:src|test|docs|bench|scripts|deploy|web)\/(?:[\w.-]+\/)*[\w.-]+\.(?:ts|js|mjs|md|java|conf|yaml|service))(?![\w/*-])/g;
    for (const f of files) {
      for (const m of f.text.matchAll(re)) {
        const p = m[1] ?? '';
        if (!existsSync(join(ROOT, p))) bad.push(`${f.path}:${lineOf(f.text, m.index ?? 0)}: ${p}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  it('catches each kind of outside citation and reads section lists (the patterns can fail)', () => {
    const samples = [
      'target parsing (digest §1)',
      'see the spec digest §3',
      'digest section 5',
      "matches the digest's example",
      'POST /api/file (seed 2.1, 4.1)',
      'the seed interface fixes sizes',
      'd=identicon (spec §6)',
      'like the spec test vectors',
      '(CONVENTIONS.md "Public interface first")',
      'see ../shared/specs/x.md',
    ];
    for (const s of samples)
      assert.ok(
        OUTSIDE.some(({ re }) => re.test(s)),
        s,
      );
    for (const s of ['the manifest digest is checked', 'sha256 digest of the body', 'a random seed 42'])
      assert.ok(!OUTSIDE.some(({ re }) => re.test(s)), s);
    assert.deepEqual(sectionCitations('(docs/protocols/reverse-proxy.md §5.4, §8.5) and gravatar.md §2'), [
      { note: 'docs/protocols/reverse-proxy.md', sections: ['5.4', '8.5'] },
      { note: 'gravatar.md', sections: ['2'] },
    ]);
    assert.deepEqual([...sectionsOf('## 3. Text\n### 5.4 apt\n5.1 **git**: x\n')], ['3', '5.4', '5.1']);
  });
});
