// The transfer.sh way with the real clients: curl -T (a file, and standard input), the delete link
// with curl -X DELETE, the instance's upload.sh run by sh (and shellcheck), a three-file curl -F
// upload downloaded as one zip that `unzip -t` accepts with byte-identical entries, and the QR code
// of a link decoded by zbarimg.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const run = promisify(execFile);

/** Runs `cmd` with `input` on its standard input. */
function runWithInput(cmd: string, args: string[], input: Buffer, cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const p = spawn(cmd, args, { cwd });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c) => {
      stdout += c;
    });
    p.stderr.on('data', (c) => {
      stderr += c;
    });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
    p.stdin.end(input);
  });
}

describe('transfer.sh-style uploads with real clients', {
  timeout: 120_000,
  skip: toolSkip('curl'),
}, () => {
  let srv: Running;
  let dir: string;
  before(async () => {
    srv = await startTestServer();
    dir = tempDir();
  });
  after(() => srv?.close());

  it('curl -T file HOST/ stores the file, prints the link on a line of its own, and the delete link deletes it', async () => {
    const file = join(dir, 'report 2026.txt');
    writeFileSync(file, 'quarterly numbers\n');
    const hdr = join(dir, 'h.txt');
    const { stdout: printed } = await run('curl', ['-fsS', '-D', hdr, '-T', file, `${srv.url}/`]);
    // The newline: the shell's prompt after the command starts on the next line.
    assert.match(printed, new RegExp(`^${srv.url}/api/file/[A-Za-z0-9]{12}\\.txt\n$`));
    const link = printed.trim();
    const got = await run('curl', ['-fsS', link], { encoding: 'buffer' });
    assert.deepEqual(got.stdout, readFileSync(file));
    const del = /^x-url-delete: (\S+)\r?$/im.exec(readFileSync(hdr, 'utf8'))?.[1] ?? '';
    assert.match(del, /\/delete\//);
    const { stdout } = await run('curl', ['-fsS', '-X', 'DELETE', del]);
    assert.equal(stdout, 'deleted 1 file\n');
    const after = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', link]);
    assert.equal(after.stdout, '404');
  });

  it('curl -T - HOST/name stores standard input (chunked) under that name', async () => {
    const body = randomBytes(200_000);
    const r = await runWithInput('curl', ['-fsS', '-T', '-', `${srv.url}/screen.png`], body, dir);
    assert.equal(r.code, 0, r.stderr);
    const got = await fetch(r.stdout.trim());
    assert.deepEqual(Buffer.from(await got.arrayBuffer()), body);
    assert.match(got.headers.get('content-disposition') ?? '', /filename="screen\.png"/);
  });

  describe('upload.sh', () => {
    let script: string;
    before(async () => {
      script = join(dir, 'upload.sh');
      await run('curl', ['-fsS', '-o', script, `${srv.url}/upload.sh`]);
    });

    it('uploads files given by name and prints their links, delete links on stderr', async () => {
      const a = join(dir, 'ä b.txt');
      writeFileSync(a, 'unicode name\n');
      const { stdout, stderr } = await run('sh', [script, '-m', '1', a]);
      const link = stdout.trim();
      assert.match(link, /\/api\/file\/[A-Za-z0-9]{12}\.txt$/);
      assert.match(stderr, /^delete: http:\/\/127\.0\.0\.1:\d+\/delete\//);
      const res = await fetch(link);
      assert.equal(await res.text(), 'unicode name\n');
      assert.equal(res.headers.get('x-remaining-downloads'), '0');
      assert.match(res.headers.get('content-disposition') ?? '', /filename\*=UTF-8''%C3%A4%20b\.txt/);
    });

    it('uploads standard input as a Flameshot pipe does (-n NAME)', async () => {
      const shot = randomBytes(50_000);
      const r = await runWithInput('sh', [script, '-n', 'shot.png'], shot, dir);
      assert.equal(r.code, 0, r.stderr);
      const res = await fetch(r.stdout.trim());
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), shot);
    });

    it('passes shellcheck', { skip: toolSkip('shellcheck') }, async () => {
      await run('shellcheck', ['-s', 'sh', script]);
    });
  });

  it('downloads a three-file curl -F upload as one zip that unzip -t accepts, entries byte-identical', {
    skip: toolSkip('unzip', ['-v']),
  }, async () => {
    const files: [string, Buffer][] = [
      ['photo.jpg', randomBytes(300_000)],
      ['notes.txt', Buffer.from('line\n'.repeat(20_000))], // stored compressed, unzipped as sent
      ['notes.txt', Buffer.from('second file, same name\n')],
    ];
    const args = ['-fsS'];
    files.forEach(([name, body], i) => {
      const p = join(dir, `in-${i}`);
      writeFileSync(p, body);
      args.push('-F', `file=@${p};filename=${name}`);
    });
    // A hostile name too: it becomes a plain entry name, never a path.
    const evil = join(dir, 'evil');
    writeFileSync(evil, 'x');
    const { stdout } = await run('curl', [...args, `${srv.url}/`]);
    assert.match(stdout, /\n$/);
    const lines = stdout.trimEnd().split('\n');
    assert.equal(lines.length, 4);
    const zipPath = join(dir, 'bundle.zip');
    await run('curl', ['-fsS', '-o', zipPath, lines[3] ?? '']);
    const t = await run('unzip', ['-t', zipPath]);
    assert.match(t.stdout, /No errors detected/);
    const names = (await run('unzip', ['-Z1', zipPath])).stdout.trim().split('\n');
    assert.deepEqual(names, ['photo.jpg', 'notes.txt', 'notes (2).txt']);
    for (const [i, name] of names.entries()) {
      const { stdout: entry } = await run('unzip', ['-p', zipPath, name], {
        encoding: 'buffer',
        maxBuffer: 4 * 1024 * 1024,
      });
      assert.deepEqual(entry, files[i]?.[1], name);
    }
    const hostile = await run('curl', [
      '-fsS',
      '-F',
      `a=@${evil};filename=../../etc/x.txt`,
      '-F',
      `b=@${evil};filename=..`,
      `${srv.url}/`,
    ]);
    const zip2 = join(dir, 'hostile.zip');
    await run('curl', ['-fsS', '-o', zip2, hostile.stdout.split('\n')[2] ?? '']);
    assert.deepEqual((await run('unzip', ['-Z1', zip2])).stdout.trim().split('\n'), ['x.txt', 'file']);
  });

  it('draws a QR code that zbarimg decodes to the link', {
    skip: toolSkip('zbarimg', ['--version']),
  }, async () => {
    const link = `${srv.url}/api/file/Ab3dEf6hIj9k.png`;
    const res = await fetch(`${srv.url}/qr.svg?text=${encodeURIComponent(link)}`);
    assert.equal(res.status, 200);
    const png = join(dir, 'qr.png');
    await sharp(Buffer.from(await res.arrayBuffer()))
      .png()
      .toFile(png);
    const { stdout } = await run('zbarimg', ['--raw', '-q', png]);
    assert.equal(stdout.trim(), link);
  });
});
