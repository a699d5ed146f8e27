// Every README/docs example that downloads works when copied as written: the shell blocks of
// README.md and docs/*.md are read, their download commands (curl writing a file, wget) and the
// file-API commands they depend on (the upload that sets TOKEN) run in real bash with real curl
// against devutil started with the documented defaults (no DEVUTIL_HOST, no public URL: examples
// say http://localhost:<port>). Only the internet is replaced: a fake GitHub behind the proxy and a
// fake Gravatar. Then every download runs again against a path that does not exist: -f must make
// it fail without leaving the error message saved under the file's name.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeGravatar } from '../fixtures/avatar/gravatar.ts';
import { photo } from '../fixtures/image/images.ts';
import { type Internet, serveFile, startInternet, text } from '../fixtures/proxy/internet.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
/** The Chromium pool's examples need a Chromium (required under CI=true, else skipped loudly). */
const noChromium = toolSkip('chromium', ['--version']);
const NEEDS_CHROMIUM = /\/plantuml\/mermaid\/svg$/;

interface Command {
  file: string;
  line: string;
  /** Writes a file (curl -o/-O, wget). */
  download: boolean;
}

/** Shell commands of the fenced sh/bash blocks, continuation lines joined, one list per block. */
export function shellBlocks(markdown: string): string[][] {
  const blocks: string[][] = [];
  for (const m of markdown.matchAll(/^```(sh|bash|shell|console)?\n([\s\S]*?)^```/gm)) {
    const body = (m[2] ?? '').replace(/\\\n\s*/g, ' ');
    blocks.push(body.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#')));
  }
  return blocks;
}

/** curl with an output file (not /dev/null), or wget. */
export function isDownload(line: string): boolean {
  if (/(^|[|;&(]\s*)wget\s/.test(line)) return true;
  if (!/\bcurl\s/.test(line)) return false;
  const opts = line.replace(/-o\s+\/dev\/null/g, '');
  return /\s(-[a-zA-Z]*[oO][a-zA-Z]*|--output|--remote-name)(\s|$)/.test(` ${opts}`);
}

function examples(): Command[][] {
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
    f.endsWith('.md'),
  );
  const out: Command[][] = [];
  for (const file of files) {
    for (const block of shellBlocks(readFileSync(join(ROOT, file), 'utf8'))) {
      // The file API commands a download depends on run too (the upload that sets TOKEN); other
      // commands (git, pip, apt lines, messages that need a bot) are not downloads.
      const cmds = block
        .filter((l) => /\bcurl\s|(^|\s)wget\s/.test(l))
        .map((line) => ({ file, line, download: isDownload(line) }))
        .filter((c) => c.download || c.line.includes('/api/file/'));
      if (cmds.some((c) => c.download)) out.push(cmds);
    }
  }
  return out;
}

/** The documented hosts, mapped onto the test server. */
function localise(line: string, base: string): string {
  return line
    .replaceAll('http://localhost:8080', base)
    .replaceAll('https://devutil.example.com', base)
    .replaceAll('https://devutil.example', base)
    .replaceAll('https://proxy.example.com', `${base}/proxy`)
    .replaceAll('https://avatars.example.com', base);
}

/** Inputs the examples name. */
function workdir(): string {
  const dir = tempDir('devutil-docs-');
  writeFileSync(join(dir, 'build.log'), 'build 42\nall tests passed\n'.repeat(50));
  writeFileSync(join(dir, 'report.txt'), 'report\n');
  writeFileSync(join(dir, 'secret.txt'), 'read once\n');
  writeFileSync(join(dir, 'diagram.puml'), '@startuml\nAlice -> Bob : hi\n@enduml\n');
  return dir;
}

/** Every file under `dir` with its size. */
function files(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else out.set(relative(dir, p), st.size);
    }
  };
  walk(dir);
  return out;
}

/** Runs the commands in one bash (set -e: the first failure ends it), recording the files after each. */
async function run(
  cmds: string[],
  dir: string,
): Promise<{ status: number | null; stderr: string; after: Map<string, number>[] }> {
  const states = tempDir('devutil-docs-states-');
  const script = ['set -eo pipefail'];
  cmds.forEach((c, i) => {
    script.push(c, `find . -type f -printf '%P\\t%s\\n' > '${states}/${i}'`);
  });
  // Asynchronous: the fake internet and Gravatar live in this process and must keep answering.
  const child = spawn('bash', ['-c', script.join('\n')], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  const status = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const after = cmds.map((_, i) => {
    const m = new Map<string, number>();
    try {
      for (const l of readFileSync(join(states, String(i)), 'utf8')
        .split('\n')
        .filter(Boolean)) {
        const [name = '', size = '0'] = l.split('\t');
        m.set(name, Number(size));
      }
    } catch {
      // the command before it failed: no state
    }
    return m;
  });
  return { status, stderr, after };
}

const ASSET = Buffer.from('tool release archive\n'.repeat(1000));

describe('README and docs download examples', { skip: toolSkip('curl') }, () => {
  let p: DevutilProcess;
  let net: Internet;
  let gravatar: FakeGravatar;
  let base = '';
  before(async () => {
    const dir = tempDir('devutil-docs-net-');
    net = await startInternet(dir);
    const asset = join(dir, 'tool.tar.gz');
    writeFileSync(asset, ASSET);
    // GitHub's release download: a redirect to signed storage, as the real one answers.
    net.on('github.com', (_req, res, url) =>
      /^\/owner\/repo\/releases\/download\/v1\.0\/tool\.tar\.gz$/.test(url.pathname)
        ? text(res, 302, '', { location: 'https://release-assets.githubusercontent.com/x/tool?sig=1' })
        : text(res, 404, 'Not Found'),
    );
    net.on('release-assets.githubusercontent.com', (req, res) => serveFile(req, res, asset));
    gravatar = await new FakeGravatar().start();
    // The image directory the category examples presuppose (the layout drawn in docs/image.md).
    const images = join(dir, 'photos');
    mkdirSync(join(images, 'cats', 'kittens'), { recursive: true });
    mkdirSync(join(images, 'dogs'));
    writeFileSync(join(images, 'cats', 'tabby.jpg'), await photo(160, 120, [200, 120, 40]));
    writeFileSync(join(images, 'cats', 'kittens', 'one.jpg'), await photo(120, 120, [220, 200, 180]));
    writeFileSync(join(images, 'dogs', 'rex.png'), await photo(120, 90, [90, 60, 30], 'png'));
    writeFileSync(join(images, 'sunset.jpg'), await photo(160, 90, [240, 120, 40]));
    p = await startDevutilProcess({
      DEVUTIL_IMAGE_DIR: images,
      DEVUTIL_HOST: undefined, // the documented defaults: every address, and
      DEVUTIL_PUBLIC_URL: undefined, // links on http://localhost:<port>
      DEVUTIL_PROXY_RESOLVE: net.resolve.join(','),
      DEVUTIL_PROXY_UPSTREAM_CA: net.caFile,
      DEVUTIL_AVATAR_UPSTREAM: gravatar.base,
      DEVUTIL_EGRESS_RESOLVE: gravatar.resolve,
      // Every language's example renders cold here (D2's runtime, the JVM with C4's include): on a
      // busy machine that outran the 10 s render deadline (504). Deadlines are tested elsewhere.
      DEVUTIL_DIAGRAMS_TIMEOUT_MS: '60000',
      // docs/diagrams.md's pie example is written for the Chromium pool (Chromium is required in CI).
      ...(noChromium ? {} : { DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM: '/usr/bin/chromium' }),
    });
    base = `http://localhost:${p.port}`;
  });
  after(async () => {
    await p?.stop();
    await net?.close();
    await gravatar?.stop();
  });

  it('finds the download examples (curl -o/-O, wget) in README.md and docs/', () => {
    const all = examples().flat();
    const downloads = all.filter((c) => c.download);
    assert.ok(downloads.length >= 10, downloads.map((c) => c.line).join('\n'));
    for (const f of [
      'README.md',
      'docs/files.md',
      'docs/image.md',
      'docs/diagrams.md',
      'docs/proxy.md',
      'docs/avatar.md',
    ])
      assert.ok(
        downloads.some((c) => c.file === f),
        `${f} has a download example`,
      );
  });

  it('runs every download example as written and gets a file from each; the upload comes back under its original name', async () => {
    let upload = false;
    for (const block of examples()) {
      const cmds = block.map((c) => localise(c.line, base));
      if (noChromium && cmds.some((c) => NEEDS_CHROMIUM.test(c))) continue;
      for (const c of cmds) {
        const foreign = (c.match(/https?:\/\/[^\s'"]+/g) ?? []).filter((u) => !u.startsWith(base));
        assert.deepEqual(foreign, [], `${block[0]?.file}: an example host the test does not map: ${c}`);
      }
      const dir = workdir();
      const before = files(dir);
      const r = await run(cmds, dir);
      if (r.status !== 0)
        console.log(
          p
            .output()
            .split('\n')
            .filter((l) => /"level":[4-6]/.test(l))
            .join('\n'),
        );
      assert.equal(r.status, 0, `${block[0]?.file}:\n${cmds.join('\n')}\n${r.stderr}`);
      let previous = before;
      block.forEach((c, i) => {
        const now = r.after[i] ?? new Map<string, number>();
        if (c.download) {
          const added = [...now].filter(([name]) => !previous.has(name));
          assert.ok(added.length >= 1, `${c.file}: no file from ${cmds[i]}`);
          for (const [name, size] of added) assert.ok(size > 0, `${c.file}: ${name} is empty`);
        }
        previous = now;
      });
      // README's upload-and-download example saves what the server has: the upload comes back under
      // its original name (the block replaced and then deleted the file again with $TOKEN: both
      // needed the real token).
      if (block[0]?.file === 'README.md' && block.some((c) => c.line.includes('TOKEN='))) {
        upload = true;
        assert.deepEqual(
          readFileSync(join(dir, 'downloads', 'build.log')),
          readFileSync(join(dir, 'build.log')),
        );
      }
    }
    assert.ok(upload, 'README has the upload-and-download example');
    // The stand-ins were reached: the proxy and avatar examples went "upstream", not to an error path.
    assert.ok(gravatar.seen.length > 0, 'the avatar example asked the (fake) Gravatar');
    assert.ok(net.seen.some((x) => x.host === 'release-assets.githubusercontent.com'));
  });

  it('makes a failed download exit non-zero without writing the file (-f)', async () => {
    for (const c of examples()
      .flat()
      .filter((x) => x.download)) {
      // Every documented path under a prefix that does not exist: the server answers an error.
      const broken = localise(c.line, `${base}/no-such-path`);
      const dir = workdir();
      const before = files(dir);
      const r = await run([broken], dir);
      assert.equal(r.status, 22, `${c.file}: curl -f must fail (exit 22): ${broken}\n${r.stderr}`);
      assert.deepEqual(files(dir), before, `${c.file}: a failed download left a file: ${broken}`);
    }
  });
});
