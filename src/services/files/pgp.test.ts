// The OpenPGP subset of password-protected files: round trips across the 64 KiB partial-body edges,
// in any write sizes; gpg opens what the encryptor writes; a wrong key, an altered byte, a cut or a
// lengthened message fail the decryption instead of passing for the file.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { decryptor, deriveKey, encryptedOverhead, encryptor, PgpError, s2kCount } from './pgp.ts';

const s2k = { salt: Buffer.from('0123456789abcdef', 'hex'), coded: 0x60 };
const password = Buffer.from('correct horse ü');

async function collect(r: Readable): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of r) out.push(c as Buffer);
  return Buffer.concat(out);
}

/** `data` written in pieces of `step` bytes. */
const pieces = (data: Buffer, step: number) => {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += step) out.push(data.subarray(i, i + step));
  return out;
};

async function seal(data: Buffer, step = 7777): Promise<Buffer> {
  const key = await deriveKey(password, s2k);
  return collect(Readable.from(pieces(data, step)).pipe(encryptor(key, s2k, randomBytes(16))));
}

async function open(message: Buffer, key?: Buffer, step = 4099): Promise<Buffer> {
  return collect(
    Readable.from(pieces(message, step)).pipe(decryptor(key ?? (await deriveKey(password, s2k)))),
  );
}

describe('OpenPGP symmetric messages', { timeout: 60_000 }, () => {
  it('decodes the S2K count byte as RFC 4880 does', () => {
    assert.equal(s2kCount(0x60), 65_536);
    assert.equal(s2kCount(0xe0), 16 * 1024 * 1024);
    assert.equal(s2kCount(0xff), 65_011_712);
  });

  it('round-trips sizes around the partial-body edges, whatever the write sizes', async () => {
    for (const n of [0, 1, 191, 192, 8383, 8384, 65_529, 65_530, 65_535, 65_536, 65_537, 200_000]) {
      const data = randomBytes(n);
      for (const step of [1_000_000, 4096, 65_536]) {
        const message = await seal(data, step);
        assert.ok(message.length <= n + encryptedOverhead(n), `${n}: within the announced overhead`);
        assert.ok((await open(message, undefined, step === 4096 ? 1 : 4099)).equals(data), `${n} in ${step}`);
      }
    }
  });

  it('is opened by gpg with the password alone', { skip: toolSkip('gpg') }, async () => {
    const dir = tempDir();
    for (const n of [0, 70_000]) {
      const data = randomBytes(n);
      const file = join(dir, `m${n}.gpg`);
      writeFileSync(file, await seal(data));
      const out = execFileSync(
        'gpg',
        ['--homedir', dir, '--batch', '--no-symkey-cache', '--pinentry-mode', 'loopback'].concat([
          '--passphrase-fd',
          '0',
          '-d',
          file,
        ]),
        { input: password, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      assert.ok(out.equals(data), `${n} bytes`);
    }
  });

  it('fails on a wrong key, an altered byte, a cut and extra bytes', async () => {
    const data = randomBytes(100_000);
    const message = await seal(data);
    const fails = async (m: Buffer, key?: Buffer) => {
      await assert.rejects(open(m, key), PgpError);
    };
    await fails(message, await deriveKey(Buffer.from('wrong'), s2k));
    // Every region: the packet headers, the prefix, the data, the MDC at the end.
    for (const at of [0, 17, 30, 5000, message.length - 70_000, message.length - 10, message.length - 1]) {
      const altered = Buffer.from(message);
      altered[at] = (altered[at] as number) ^ 0x01;
      await fails(altered);
    }
    for (const cut of [10, 40, 66_000, message.length - 1]) await fails(message.subarray(0, cut));
    await fails(Buffer.concat([message, Buffer.from([0xcb, 0x00])]));
  });
});
