// Password-protected files the transfer.sh way, with real clients: `curl -T` with X-Encrypt-Password
// stores an OpenPGP message that `gpg -d` opens with the password alone (the stored bytes on disk and
// the download without the password); X-Decrypt-Password gives the original back (Range too); a
// wrong password is 403 before any byte; the password never reaches a log line.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type S3Handle, startS3 } from '../../../../test/fixtures/files/s3.ts';
import { testSecret } from '../../../../test/helpers/secrets.ts';
import { LogCapture, type Running, startTestServer, tempDir } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';

const run = promisify(execFile);

/** `gpg -d` of `file` with `password` in a home of its own, nothing cached: the original or a throw. */
function gpgDecrypt(file: string, password: string): Promise<Buffer> {
  const args = ['--homedir', tempDir('devutil-gnupg-'), '--batch', '--no-symkey-cache'];
  args.push('--pinentry-mode', 'loopback', '--passphrase-fd', '0', '-d', file);
  return new Promise((resolve, reject) => {
    const gpg = spawn('gpg', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    gpg.stdout.on('data', (c: Buffer) => out.push(c));
    gpg.stderr.on('data', (c: Buffer) => {
      err += c;
    });
    gpg.on('error', reject);
    gpg.on('close', (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`gpg -d exited ${code}: ${err}`)),
    );
    gpg.stdin.end(`${password}\n`);
  });
}

const curl = async (args: string[]) =>
  (await run('curl', ['-sS', ...args], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 })).stdout;

for (const backend of ['fs', 's3'] as const)
  describe(`password-protected uploads (${backend})`, {
    timeout: 180_000,
    skip: toolSkip('gpg') || toolSkip('curl') || toolSkip('unzip', ['-v']),
  }, () => {
    let srv: Running;
    let s3: S3Handle | undefined;
    const logs = new LogCapture();
    const dir = tempDir();
    // Text that would be compressed were it not protected, and a tail of random bytes.
    const original = Buffer.concat([
      Buffer.from('confidential report\n'.repeat(20_000)),
      randomBytes(300_000),
    ]);
    const file = join(dir, 'report.txt');
    writeFileSync(file, original);
    const password = testSecret('pw-ü ');
    // fetch sends a header value's characters as bytes (latin1); curl sends its argument's UTF-8.
    const wire = Buffer.from(password).toString('latin1');
    let link = '';

    before(async () => {
      s3 = backend === 's3' ? await startS3() : undefined;
      srv = await startTestServer({
        logs,
        overrides: { files: { rateLimit: 'off' }, ...(s3 ? { storage: s3.overrides } : {}) } as never,
      });
      link = (await curl(['-f', '-H', `X-Encrypt-Password: ${password}`, '-T', file, `${srv.url}/`]))
        .toString()
        .trim();
      assert.match(link, new RegExp(`^${srv.url}/api/file/[A-Za-z0-9]{12}\\.txt$`));
    });
    after(async () => {
      await srv?.close();
      await s3?.close();
    });

    it('stores an OpenPGP message that gpg -d opens with the password alone', async () => {
      const key = link.split('/').pop() ?? '';
      const got = await srv.app.ctx.blobs.get(`files/${key}`);
      assert.ok(got, 'stored');
      const chunks: Buffer[] = [];
      for await (const c of got.body) chunks.push(c as Buffer);
      const stored = Buffer.concat(chunks);
      assert.equal(stored.includes(Buffer.from('confidential report')), false, 'no plaintext stored');
      assert.equal(got.info.meta['encoding'], 'identity', 'stored as the message alone, not compressed');
      const at = join(dir, `stored-${backend}.gpg`);
      writeFileSync(at, stored);
      assert.ok((await gpgDecrypt(at, password)).equals(original));
    });

    it('answers a download without the password with the message, as <name>.gpg', async () => {
      const out = join(dir, `download-${backend}.gpg`);
      const headers = (await curl(['-f', '-D', '-', '-o', out, link])).toString();
      assert.match(headers, /content-type: application\/pgp-encrypted/i);
      assert.match(headers, /content-disposition: attachment; filename="report\.txt\.gpg"/i);
      assert.match(headers, /vary: x-decrypt-password/i);
      assert.ok((await gpgDecrypt(out, password)).equals(original));
    });

    it('gives the original back with X-Decrypt-Password, whole and in ranges', async () => {
      const res = await fetch(link, { headers: { 'x-decrypt-password': wire } });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-disposition') ?? '', /filename="report\.txt"/);
      assert.equal(res.headers.get('content-length'), String(original.length));
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(original));
      // curl sends the password's UTF-8 bytes as they are, as gpg reads them.
      const viaCurl = await curl(['-f', '-H', `X-Decrypt-Password: ${password}`, link]);
      assert.ok(viaCurl.equals(original));
      const part = await fetch(link, {
        headers: { 'x-decrypt-password': wire, range: 'bytes=399990-400009' },
      });
      assert.equal(part.status, 206);
      assert.ok(Buffer.from(await part.arrayBuffer()).equals(original.subarray(399_990, 400_010)));
    });

    it('refuses a wrong or empty password with a clear 4xx and sends no byte of the file', async () => {
      const wrong = await fetch(link, { headers: { 'x-decrypt-password': `${wire}x` } });
      assert.equal(wrong.status, 403);
      assert.deepEqual(await wrong.json(), {
        success: false,
        message: 'X-Decrypt-Password does not open this file',
      });
      const empty = await fetch(link, { headers: { 'x-decrypt-password': '' } });
      assert.equal(empty.status, 400);
      const refusedUpload = await fetch(`${srv.url}/x.txt`, {
        method: 'PUT',
        body: 'x',
        headers: { 'x-encrypt-password': '' },
      });
      assert.equal(refusedUpload.status, 400);
      assert.match(await refusedUpload.text(), /X-Encrypt-Password/);
    });

    it('protects every file of a multipart upload, and a zip carries their messages', async () => {
      const form = new FormData();
      form.append('file', new Blob(['alpha secret\n']), 'a.txt');
      form.append('file', new Blob(['beta secret\n']), 'b.txt');
      const res = await fetch(`${srv.url}/`, {
        method: 'POST',
        body: form,
        headers: { 'x-encrypt-password': wire },
      });
      assert.equal(res.status, 200);
      const [a, b, zip] = (await res.text()).trim().split('\n');
      for (const [url, text] of [
        [a, 'alpha secret\n'],
        [b, 'beta secret\n'],
      ] as const) {
        const plain = await fetch(url ?? '', { headers: { 'x-decrypt-password': wire } });
        assert.equal(await plain.text(), text);
      }
      const out = join(dir, `bundle-${backend}.zip`);
      writeFileSync(out, Buffer.from(await (await fetch(zip ?? '')).arrayBuffer()));
      const { stdout } = await run('unzip', ['-l', out]);
      assert.match(stdout, /a\.txt\.gpg/);
      await run('unzip', ['-o', '-d', join(dir, `unzipped-${backend}`), out]);
      const entry = join(dir, `unzipped-${backend}`, 'b.txt.gpg');
      assert.equal((await gpgDecrypt(entry, password)).toString(), 'beta secret\n');
      assert.ok(readFileSync(entry).length > 0);
    });

    it('refuses X-Encrypt-Password where it is not offered rather than store the file in the clear', async () => {
      const r = await fetch(`${srv.url}/api/upload`, {
        method: 'POST',
        headers: { 'tus-resumable': '1.0.0', 'upload-length': '10', 'x-encrypt-password': wire },
      });
      assert.equal(r.status, 400);
      assert.match((await r.json()).message, /not offered for resumable/);
    });

    it('never logs the password', () => {
      assert.ok(logs.text().includes('file stored'), 'the uploads were logged');
      assert.equal(logs.text().includes(password), false);
      assert.equal(logs.text().includes(wire), false);
    });
  });
