// Restrictive networks end to end: npm and git through devutil through a real squid. The host names
// of the fake internet are overridden to 192.0.2.10:443 (a documentation-range address, as a corporate
// resolver or split-horizon DNS hands out), where nothing listens: only squid's own mapping sends that
// address on to the stand-in upstreams, so they are reachable through the proxy alone. Without the
// allow-list the guard refuses with 403 naming the host, the address and DEVUTIL_EGRESS_ALLOW_CIDRS
// (and nothing reaches squid); with 192.0.2.0/24 allowed the same upstreams are reached through it.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { installGithub, makeRepos } from '../fixtures/proxy/github.ts';
import { HOSTS, type Internet, startInternet } from '../fixtures/proxy/internet.ts';
import { type FakeNpm, installNpm } from '../fixtures/proxy/npm.ts';
import { ok, run } from '../fixtures/proxy/run.ts';
import { type ForwardProxy, startSquid } from '../helpers/forward-proxy.ts';
import { registerSecret } from '../helpers/secrets.ts';
import { type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { hasTool, missing } from '../helpers/tools.ts';

const absent = [
  ['squid', ['-v']],
  ['npm', ['--version']],
  ['git', ['--version']],
  ['openssl', ['version']],
].filter(([cmd, args]) => !hasTool(cmd as string, args as string[]));
const skip = absent.length ? missing(`${absent.map(([c]) => c).join(', ')} not installed`) : false;

const STAND_IN = '192.0.2.10';
const AUTH = { user: 'ops', password: registerSecret('pr0xy-pass') };
const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', HOME: tempDir('devutil-home-') };

/** The child npm sees none of the npm_* settings `npm test` exported to this process. */
function npmEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^npm_/i.test(k)) env[k] = v;
  return { ...env, HOME: home, NPM_CONFIG_UPDATE_NOTIFIER: 'false', NPM_CONFIG_FETCH_RETRIES: '0' };
}

describe('outbound proxy: npm and git through devutil through squid', { skip, timeout: 300_000 }, () => {
  let net: Internet;
  let squid: ForwardProxy;
  let reg: FakeNpm;
  let head = '';
  const up: { close(): Promise<void> }[] = [];
  let refused: Running;
  let allowed: Running;

  /** A devutil whose upstreams are at STAND_IN (the resolver's answer) and whose proxy is `proxyUrl`. */
  const devutil = async (env: Record<string, string>) => {
    const s = await startTestServer({
      overrides: { proxy: { ecosystems: ['npm'] } },
      env: {
        DEVUTIL_EGRESS_RESOLVE: HOSTS.map((h) => `${h}=${STAND_IN}:443`).join(','),
        DEVUTIL_PROXY_UPSTREAM_CA: net.caFile,
        ...env,
      },
    });
    up.push(s);
    return s;
  };

  before(async () => {
    const dir = tempDir('devutil-egress-proxy-');
    net = await startInternet(dir);
    up.push(net);
    try {
      const asset = join(dir, 'asset.bin');
      writeFileSync(asset, 'asset\n');
      head = makeRepos(dir, false).head;
      installGithub(net, dir, asset);
      reg = installNpm(net);
      squid = await startSquid({ auth: AUTH, map: { [`${STAND_IN}:443`]: `127.0.0.1:${net.port}` } });
      up.push(squid);
      refused = await devutil({ DEVUTIL_EGRESS_PROXY: squid.url });
      allowed = await devutil({
        DEVUTIL_EGRESS_PROXY: squid.url,
        DEVUTIL_EGRESS_ALLOW_CIDRS: '192.0.2.0/24',
      });
    } catch (err) {
      // Whatever came up is stopped, or it keeps the test file alive.
      for (const u of up.reverse()) await u.close().catch(() => {});
      throw err;
    }
  });
  after(async () => {
    for (const u of up.reverse()) await u.close().catch(() => {});
  });

  const npmInstall = async (base: string, names: string[]) => {
    const dir = tempDir('devutil-npm-');
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{"name":"scratch","version":"1.0.0","private":true}\n');
    writeFileSync(join(dir, 'npmrc'), '');
    const args = ['install', '--registry', `${base}/proxy/npm/`, '--userconfig', join(dir, 'npmrc')];
    const r = await run(
      'npm',
      [...args, '--cache', join(dir, 'cache'), '--no-audit', '--no-fund', ...names],
      {
        cwd: project,
        env: npmEnv(dir),
        timeoutMs: 120_000,
      },
    );
    return { ...r, project };
  };

  it('refuses the documentation-range address with 403 naming host, address and setting; squid is never asked', async () => {
    const seen = net.seen.length;
    const npm = await curl([`${refused.url}/proxy/npm/devutil-unscoped`]);
    assert.equal(npm.status, 403, npm.body.toString());
    assert.match(npm.headers['content-type'] ?? '', /^application\/json/, "npm's own error shape");
    const why = (JSON.parse(npm.body.toString()) as { error: string }).error;
    assert.match(why, /registry\.npmjs\.org is overridden to 192\.0\.2\.10, a non-public address/);
    assert.match(why, /DEVUTIL_EGRESS_ALLOW_CIDRS/);

    const git = await curl([
      `${refused.url}/proxy/https://github.com/o/tiny.git/info/refs?service=git-upload-pack`,
    ]);
    assert.equal(git.status, 403);
    assert.match(
      git.body.toString(),
      /github\.com is overridden to 192\.0\.2\.10.*DEVUTIL_EGRESS_ALLOW_CIDRS/,
    );

    // The clients stop on a 403 (a 502 they would retry) and show devutil's reason.
    const install = await npmInstall(refused.url, ['devutil-unscoped']);
    assert.notEqual(install.code, 0);
    assert.match(
      install.stderr,
      /403 Forbidden .* registry\.npmjs\.org is overridden to 192\.0\.2\.10.*DEVUTIL_EGRESS_ALLOW_CIDRS/,
    );
    const clone = await run('git', ['ls-remote', `${refused.url}/proxy/https://github.com/o/tiny.git`], {
      env: GIT_ENV,
    });
    assert.notEqual(clone.code, 0);
    assert.match(
      clone.stderr,
      /remote: .*github\.com is overridden to 192\.0\.2\.10.*DEVUTIL_EGRESS_ALLOW_CIDRS/,
    );
    assert.match(clone.stderr, /returned error: 403/);

    assert.deepEqual(squid.connects(), [], 'no tunnel was asked for');
    assert.equal(net.seen.length, seen, 'no request reached a stand-in');
  });

  it('with the range allowed, npm installs and git clones through squid (CONNECT with credentials)', async () => {
    const install = await npmInstall(allowed.url, ['devutil-unscoped', '@devutil/scoped']);
    assert.equal(install.code, 0, install.stderr);
    const mod = (p: string) => readFileSync(join(install.project, 'node_modules', p, 'index.js'), 'utf8');
    assert.match(mod('devutil-unscoped'), /devutil-unscoped@1\.0\.0/);
    assert.match(mod('@devutil/scoped'), /@devutil\/scoped@2\.0\.0/);
    assert.match(mod('devutil-dep'), /devutil-dep@1\.2\.0/);
    for (const p of reg.packages)
      assert.ok(
        net.seen.some((s) => s.host === 'registry.npmjs.org' && s.url === p.path),
        p.path,
      );

    const dest = join(tempDir('devutil-clone-'), 'tiny');
    await ok('git', ['clone', '-q', `${allowed.url}/proxy/github.com/o/tiny`, dest], { env: GIT_ENV });
    const rev = await ok('git', ['rev-parse', 'HEAD'], { cwd: dest, env: GIT_ENV });
    assert.equal(rev.stdout.trim(), head);
    assert.ok(net.seen.some((s) => s.host === 'github.com' && s.url.startsWith('/o/tiny')));

    // Every tunnel was asked for the address the resolver gave, as the authenticated user.
    assert.ok(squid.connects().length > 0);
    assert.deepEqual([...new Set(squid.connects())], [`${STAND_IN}:443`]);
    assert.match(
      squid.log(),
      new RegExp(`TCP_TUNNEL/200 .* CONNECT 127\\.0\\.0\\.1:${net.port} ${AUTH.user} `),
    );
  });

  it('cannot reach the stand-ins without the proxy: they are reachable through it alone', async () => {
    const direct = await devutil({
      DEVUTIL_EGRESS_ALLOW_CIDRS: '192.0.2.0/24',
      DEVUTIL_PROXY_CONNECT_TIMEOUT_MS: '1s',
    });
    const before = { seen: net.seen.length, tunnels: squid.connects().length };
    const r = await curl([`${direct.url}/proxy/npm/devutil-dep`]);
    assert.ok([502, 504].includes(r.status), `${r.status} ${r.body.toString()}`);
    assert.deepEqual({ seen: net.seen.length, tunnels: squid.connects().length }, before);
  });

  it('answers 502 naming the proxy when it refuses the credentials, never showing the password', async () => {
    const wrong = await devutil({
      DEVUTIL_EGRESS_PROXY: squid.url.replace(AUTH.password, 'not-the-password'),
      DEVUTIL_EGRESS_ALLOW_CIDRS: '192.0.2.0/24',
    });
    const r = await curl([`${wrong.url}/proxy/npm/devutil-dep`]);
    assert.equal(r.status, 502);
    const why = (JSON.parse(r.body.toString()) as { error: string }).error;
    assert.match(why, new RegExp(`outbound proxy 127\\.0\\.0\\.1:${squid.port} answered 407 to CONNECT`));
    assert.doesNotMatch(r.body.toString(), /not-the-password|pr0xy-pass/);
  });
});
