import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listenWithFallback } from './main.ts';

/** A listen() that fails for the hosts in `fail` with an errno code, as net.Server does. */
function listener(fail: Record<string, string>) {
  const tried: string[] = [];
  const listen = async (host: string) => {
    tried.push(host);
    const code = fail[host];
    if (code) throw Object.assign(new Error(`listen ${code} ${host}`), { code });
  };
  return { tried, listen };
}

function warnings() {
  const lines: { obj: unknown; msg: string }[] = [];
  return { lines, logger: { warn: (obj: unknown, msg: string) => lines.push({ obj, msg }) } as never };
}

describe('listen address', () => {
  for (const code of ['EAFNOSUPPORT', 'EADDRNOTAVAIL']) {
    it(`falls back from :: to 0.0.0.0 with one log line when IPv6 is missing (${code})`, async () => {
      const l = listener({ '::': code });
      const w = warnings();
      assert.equal(await listenWithFallback(l.listen, '::', w.logger), '0.0.0.0');
      assert.deepEqual(l.tried, ['::', '0.0.0.0']);
      assert.equal(w.lines.length, 1);
      assert.match(w.lines[0]?.msg ?? '', /IPv6 is not available.*0\.0\.0\.0/);
    });
  }

  it('listens on :: without a word when IPv6 is there', async () => {
    const l = listener({});
    const w = warnings();
    assert.equal(await listenWithFallback(l.listen, '::', w.logger), '::');
    assert.deepEqual(l.tried, ['::']);
    assert.equal(w.lines.length, 0);
  });

  it('does not hide other failures or second-guess an address the operator chose', async () => {
    await assert.rejects(
      listenWithFallback(listener({ '::': 'EADDRINUSE' }).listen, '::', warnings().logger),
      /EADDRINUSE/,
    );
    const l = listener({ '::1': 'EADDRNOTAVAIL' });
    await assert.rejects(listenWithFallback(l.listen, '::1', warnings().logger), /EADDRNOTAVAIL/);
    assert.deepEqual(l.tried, ['::1']);
  });
});
