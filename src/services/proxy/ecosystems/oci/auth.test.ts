// Tokens this server issues (open or behind the proxy secret) and upstream challenges as registries
// send them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Dispatcher } from 'undici';
import type { Egress } from '../../../../infra/egress/client.ts';
import { AllowList } from '../../target.ts';
import { ClientTokens, challenge, parseChallenge, UpstreamTokens } from './auth.ts';

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

describe('oci tokens', () => {
  it('issues tokens to anyone without a secret, valid until they expire', () => {
    const t = new ClientTokens('');
    const now = 1_800_000_000_000;
    const issued = t.issue(undefined, now);
    assert.ok(issued);
    assert.equal(t.valid(`Bearer ${issued.token}`, now + 1000), true);
    assert.equal(t.valid(`Bearer ${issued.token}`, now + 301_000), false, 'expired');
    const last = issued.token.endsWith('x') ? 'y' : 'x';
    assert.equal(t.valid(`Bearer ${issued.token.slice(0, -1)}${last}`, now), false, 'forged');
    assert.equal(t.valid(undefined, now), false);
  });

  it('issues tokens only for the secret as a Basic password, valid on every instance', () => {
    const a = new ClientTokens('s3cret-pass');
    const b = new ClientTokens('s3cret-pass');
    const now = 1_800_000_000_000;
    assert.equal(a.issue(undefined, now), null);
    assert.equal(a.issue(basic('u', 'wrong'), now), null);
    assert.equal(a.issue('Basic !!!', now), null);
    const ok = a.issue(basic('anyone', 's3cret-pass'), now);
    assert.ok(ok);
    assert.equal(b.valid(`Bearer ${ok.token}`, now), true, 'same secret, same key');
    assert.equal(new ClientTokens('other-secret').valid(`Bearer ${ok.token}`, now), false);
  });

  it('parses registry challenges, quoted and not', () => {
    assert.deepEqual(
      parseChallenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull"',
      ),
      {
        scheme: 'bearer',
        params: {
          realm: 'https://auth.docker.io/token',
          service: 'registry.docker.io',
          scope: 'repository:library/alpine:pull',
        },
      },
    );
    assert.deepEqual(parseChallenge('Basic realm=x'), { scheme: 'basic', params: { realm: 'x' } });
    assert.equal(parseChallenge('Bearer realm="a\\"b"')?.params['realm'], 'a"b');
    assert.equal(
      challenge('http://h/v2/token', 'repository:x:pull'),
      'Bearer realm="http://h/v2/token",service="devutil",scope="repository:x:pull"',
    );
  });

  it("asks only a token realm the proxy's upstream URL check allows", async () => {
    const asked: string[] = [];
    const agent: Egress = {
      async request(o: Dispatcher.RequestOptions) {
        asked.push(`${o.origin}${o.path}`);
        const body = JSON.stringify({ token: 't0k', expires_in: 300 });
        return {
          statusCode: 200,
          headers: {},
          body: { json: async () => JSON.parse(body), text: async () => body, resume() {} },
        } as unknown as Dispatcher.ResponseData;
      },
      close: async () => {},
    };
    const tokens = new UpstreamTokens(agent, new AllowList(['quay.io', '*.docker.io']), new Map(), Date.now);
    const refused = [
      'https://evil.test/token',
      'http://quay.io/token',
      'https://quay.io:8443/token',
      'https://user:pw@quay.io/token',
      'https://quay.io./token',
      'https://1.2.3.4/token',
    ];
    for (const realm of refused)
      await assert.rejects(
        tokens.answer('quay.io', 'o/r', `Bearer realm="${realm}",service="quay.io"`),
        (e: Error) => /token realm of quay\.io is not allowed/.test(e.message),
        realm,
      );
    assert.deepEqual(asked, [], 'no refused realm was asked');
    await tokens
      .answer('quay.io', 'o/r', 'Bearer realm="https://auth.docker.io/token",service="quay.io"')
      .catch(() => null);
    assert.equal(asked.length, 1, 'an allowed realm is asked');
    assert.match(
      asked[0] ?? '',
      /^https:\/\/auth\.docker\.io\/token\?service=quay\.io&scope=repository%3Ao%2Fr%3Apull$/,
    );
  });
});
