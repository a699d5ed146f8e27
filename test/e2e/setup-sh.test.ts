// setup.sh end to end: `curl -fsSL <devutil>/setup.sh | sh -s -- ...` in a scratch HOME (and a scratch
// root for /etc/apt and /etc/docker) with existing config files, then real git, pip, npm and go use
// devutil, whose fake upstreams are reachable only through the proxy; --undo puts every file back
// byte for byte; an instance the script cannot reach, or that answers as something else, changes nothing;
// a tool whose upstream devutil cannot reach is left as it was, with the reason devutil gave.
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { APT_PROBES, PROBES } from '../../src/services/setup/probes.ts';
import { GO_MODULE, GO_VERSION, installGo } from '../fixtures/proxy/goproxy.ts';
import { installNpm } from '../fixtures/proxy/npm.ts';
import { installPypi, WHEEL } from '../fixtures/proxy/pypi.ts';
import { type RunResult, run } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { CLOSED_PORT, freePort } from '../helpers/ports.ts';
import { buildTestServer, startTestServer, tempDir } from '../helpers/server.ts';
import { hasTool, missing } from '../helpers/tools.ts';

const TOOLS = ['dash', 'curl', 'git', 'npm', 'go', 'python3'];
const absent = TOOLS.filter(
  (t) => !hasTool(t, t === 'go' ? ['version'] : t === 'dash' ? ['-c', ':'] : undefined),
);
const skip = absent.length ? missing(`${absent.join(', ')} not installed`) : false;

/** Runs a command with exactly this environment (none of the test runner's npm_* or proxy settings). */
const exec = (cmd: string, args: string[], env: Record<string, string>, cwd?: string): Promise<RunResult> =>
  run(cmd, args, { env, exactEnv: true, timeoutMs: 90_000, ...(cwd ? { cwd } : {}) });

async function ok(cmd: string, args: string[], env: Record<string, string>, cwd?: string): Promise<string> {
  const r = await exec(cmd, args, env, cwd);
  assert.equal(r.code, 0, `${cmd} ${args.join(' ')}\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

/** Every path under `dir` with its bytes (directories as 'dir'): what --undo must give back. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (lstatSync(join(dir, r)).isDirectory()) {
        out.set(r, 'dir');
        walk(r);
      } else out.set(r, readFileSync(join(dir, r)).toString('base64'));
    }
  };
  walk('');
  return out;
}

const GITCONFIG =
  '[user]\n\tname = Test User\n\temail = test@example.com\n[url "https://mirror.example/https://github.com/"]\n\tinsteadOf = https://github.com/\n';
const NPMRC = 'fund=false\nregistry=https://registry.npmmirror.example/\nsave-exact=true'; // no final newline
const PROFILE = '# ~/.profile\nexport PATH="$HOME/bin:$PATH"\n';
const SOURCES =
  'deb http://deb.debian.org/debian bookworm main\ndeb https://security.debian.org/debian-security bookworm-security main\n';
const DEB822 =
  'Types: deb\nURIs: https://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\n';
const OTHER = 'deb https://packages.example.org/repo stable main\n';
const DAEMON = '{\n    "log-driver": "journald"\n}\n';

/** A scratch HOME and root with existing config files; returns both paths. */
function seed(): { home: string; root: string } {
  const home = tempDir('devutil-setup-home-');
  const root = tempDir('devutil-setup-root-');
  writeFileSync(join(home, '.gitconfig'), GITCONFIG);
  writeFileSync(join(home, '.npmrc'), NPMRC);
  writeFileSync(join(home, '.profile'), PROFILE);
  mkdirSync(join(root, 'etc/apt/sources.list.d'), { recursive: true });
  mkdirSync(join(root, 'etc/docker'), { recursive: true });
  writeFileSync(join(root, 'etc/apt/sources.list'), SOURCES);
  writeFileSync(join(root, 'etc/apt/sources.list.d/backports.sources'), DEB822);
  writeFileSync(join(root, 'etc/apt/sources.list.d/other.list'), OTHER);
  writeFileSync(join(root, 'etc/docker/daemon.json'), DAEMON);
  return { home, root };
}

describe('setup.sh against a real devutil', { skip, timeout: 240_000 }, () => {
  let w: World;
  let home: string;
  let root: string;
  let before0: { home: Map<string, string>; root: Map<string, string> };
  let env: Record<string, string>;
  const caches = tempDir('devutil-setup-caches-');

  before(async () => {
    w = await startWorld({ git: 'small', overrides: { proxy: { ecosystems: ['npm', 'go', 'hf', 'oci'] } } });
    installPypi(w.net, w.dir);
    installNpm(w.net);
    installGo(w.net);
    ({ home, root } = seed());
    before0 = { home: snapshot(home), root: snapshot(root) };
    env = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: home,
      LANG: 'C',
      DEVUTIL_SETUP_ROOT: root,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
    };
  });
  after(() => w?.close());

  /** Exactly what a user types: curl piped into sh (dash, Debian's /bin/sh). */
  const setup = (args: string[], e = env, url = w.proxy.url) =>
    exec('dash', ['-c', 'curl -fsSL "$0/setup.sh" | dash -s -- "$@"', url, ...args], e);
  // The clients keep their caches outside HOME, so HOME holds only what setup.sh wrote.
  const clientEnv = () => ({
    ...env,
    npm_config_cache: join(caches, 'npm'),
    NPM_CONFIG_UPDATE_NOTIFIER: 'false',
    PIP_NO_INPUT: '1',
    PIP_DISABLE_PIP_VERSION_CHECK: '1',
    PIP_NO_CACHE_DIR: '1',
    GOPATH: join(caches, 'gopath'),
    GOMODCACHE: join(caches, 'gopath/mod'),
    GOCACHE: join(caches, 'gocache'),
    GOFLAGS: '-modcacherw',
    GOTOOLCHAIN: 'local',
    GONOSUMDB: '*',
    GONOSUMCHECK: '1',
    GOSUMDB: 'off',
    // pip runs `rustc --version` for its User-Agent; a rustup shim would make ~/.rustup.
    RUSTUP_HOME: join(caches, 'rustup'),
  });

  it('--dry-run shows each change and changes nothing', async () => {
    const r = await setup(['--dry-run', 'git', 'pip', 'apt', 'npm', 'go', 'docker', 'hf', 'relay']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    for (const f of ['.gitconfig', '.config/pip/pip.conf', '.npmrc', '.profile', '.config/go/env'])
      assert.match(r.stdout, new RegExp(`would change ${join(home, f).replace(/[.]/g, '\\.')}:`), f);
    assert.match(r.stdout, /would change .*etc\/apt\/sources\.list:/);
    assert.match(r.stdout, /\+registry=http:\/\/127\.0\.0\.1:\d+\/proxy\/npm\//);
    assert.deepEqual(snapshot(home), before0.home);
    assert.deepEqual(snapshot(root), before0.root);
  });

  it('writes each tool’s own config; git, pip, npm and go then go through devutil', async () => {
    const r = await setup(['git', 'pip', 'apt', 'npm', 'go', 'docker', 'hf', 'relay']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const base = `${w.proxy.url}/proxy`;
    const ce = clientEnv();

    // Each tool was checked first with one real file of its upstream, fetched through devutil.
    for (const up of [
      ...Object.values(PROBES).map((p) => p.upstream),
      `https://deb.debian.org${APT_PROBES['deb.debian.org']}`,
    ]) {
      const u = new URL(up);
      assert.ok(
        w.net.seen.some((x) => x.host === u.host && x.url === `${u.pathname}${u.search}`),
        up,
      );
    }

    // git: the other mirror's rewrite is gone, this one is there; a plain github.com clone works.
    const rewrites = await ok('git', ['config', '--global', '--get-regexp', 'insteadof'], ce);
    assert.equal(rewrites, `url.${base}/https://github.com/.insteadof https://github.com/\n`);
    assert.match(readFileSync(join(home, '.gitconfig'), 'utf8'), /name = Test User/);
    const dest = join(tempDir('devutil-setup-clone-'), 'tiny');
    await ok('git', ['clone', '-q', 'https://github.com/o/tiny.git', dest], ce);
    assert.equal((await ok('git', ['rev-parse', 'HEAD'], ce, dest)).trim(), w.head);
    assert.ok(w.net.seen.some((s) => s.host === 'github.com' && s.url.startsWith('/o/tiny')));

    // pip: index-url in ~/.config/pip/pip.conf.
    const wheels = tempDir('devutil-setup-pip-');
    await ok('python3', ['-m', 'pip', 'download', '--no-deps', '-d', wheels, 'devutil-hello'], ce);
    assert.ok(existsSync(join(wheels, WHEEL)));
    assert.ok(w.net.seen.some((s) => s.host === 'files.pythonhosted.org' && s.url.endsWith('.whl')));

    // npm: registry in ~/.npmrc, the user's other settings kept.
    assert.equal((await ok('npm', ['view', 'devutil-unscoped', 'version'], ce)).trim(), '1.0.0');
    assert.ok(
      w.net.seen.some((s) => s.host === 'registry.npmjs.org' && s.url.startsWith('/devutil-unscoped')),
    );
    const npmrc = readFileSync(join(home, '.npmrc'), 'utf8');
    assert.equal(npmrc, `fund=false\nregistry=${base}/npm/\nsave-exact=true\n`);

    // go: GOPROXY in go env; a module query goes through it.
    assert.equal((await ok('go', ['env', 'GOPROXY'], ce)).trim(), `${base}/go`);
    const project = tempDir('devutil-setup-go-');
    writeFileSync(join(project, 'go.mod'), 'module example.com/scratch\n\ngo 1.19\n');
    const versions = await ok('go', ['list', '-m', '-versions', GO_MODULE], ce, project);
    assert.match(versions, new RegExp(GO_VERSION));
    assert.ok(w.net.seen.some((s) => s.host === 'proxy.golang.org' && s.url.endsWith('/@v/list')));

    // hf: HF_ENDPOINT for login shells.
    const hf = await ok('dash', ['-c', '. "$HOME/.profile"; printf %s "$HF_ENDPOINT"'], ce);
    assert.equal(hf, `${base}/hf`);

    // apt: Debian's hosts through the proxy, in both source formats; another repository untouched.
    assert.equal(
      readFileSync(join(root, 'etc/apt/sources.list'), 'utf8'),
      `deb ${base}/deb.debian.org/debian bookworm main\ndeb ${base}/security.debian.org/debian-security bookworm-security main\n`,
    );
    assert.match(
      readFileSync(join(root, 'etc/apt/sources.list.d/backports.sources'), 'utf8'),
      new RegExp(`^URIs: ${base}/deb\\.debian\\.org/debian$`, 'm'),
    );
    assert.equal(readFileSync(join(root, 'etc/apt/sources.list.d/other.list'), 'utf8'), OTHER);

    // docker: the mirror added to the existing daemon.json, its other settings kept.
    const daemon = JSON.parse(readFileSync(join(root, 'etc/docker/daemon.json'), 'utf8'));
    assert.deepEqual(daemon, {
      'log-driver': 'journald',
      'registry-mirrors': [w.proxy.url],
      'insecure-registries': [`127.0.0.1:${w.proxy.port}`],
    });

    // relay: printed only.
    assert.match(r.stdout, /relay:.*default, relay:\/\/127\.0\.0\.1:\d+\/\?id=/);
  });

  it('a second run finds everything set and changes nothing', async () => {
    const mid = { home: snapshot(home), root: snapshot(root) };
    const r = await setup(['git', 'pip', 'apt', 'npm', 'go', 'docker', 'hf']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /git: .* is already set/);
    assert.doesNotMatch(r.stdout, /changed|created/);
    assert.deepEqual(snapshot(home), mid.home);
    assert.deepEqual(snapshot(root), mid.root);
  });

  it('--undo restores every file byte for byte and removes what it created', async () => {
    const r = await setup(['--undo']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /restored .*\.gitconfig/);
    assert.deepEqual(snapshot(home), before0.home);
    assert.deepEqual(snapshot(root), before0.root);
    const again = await setup(['--undo']);
    assert.match(again.stdout, /nothing to undo/);
  });

  it('leaves each tool whose upstream devutil cannot reach as it was, says why, and sets up the others', async () => {
    // Another devutil on the same fake internet where only npm's registry is where it should be:
    // GitHub, PyPI and Debian's hosts are at a closed port, the Go module proxy at a private address.
    const down = [
      'github.com',
      'pypi.org',
      'files.pythonhosted.org',
      'deb.debian.org',
      'security.debian.org',
    ];
    const cut = await startTestServer({
      overrides: { proxy: { ecosystems: ['npm', 'go'] } },
      env: {
        DEVUTIL_PROXY_RESOLVE: [
          `registry.npmjs.org=127.0.0.1:${w.net.port}`,
          ...down.map((h) => `${h}=127.0.0.1:${CLOSED_PORT}`),
          'proxy.golang.org=10.0.0.1:443',
        ].join(','),
        DEVUTIL_PROXY_UPSTREAM_CA: w.net.caFile,
      },
    });
    try {
      const r = await setup(['git', 'pip', 'apt', 'npm', 'go'], env, cut.url);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      for (const t of ['git', 'pip', 'apt'])
        assert.match(
          r.stderr,
          new RegExp(
            `^devutil setup: ${t}: skipped, nothing changed: devutil could not fetch ${cut.url}/proxy/\\S+ \\(HTTP 502: upstream connection failed\\)$`,
            'm',
          ),
        );
      // A refusal by the address guard comes with what would allow it.
      assert.match(
        r.stderr,
        /^devutil setup: go: skipped, nothing changed: devutil could not fetch \S+\/go\/rsc\.io\/quote\/@v\/list \(HTTP 403: .*proxy\.golang\.org is overridden to 10\.0\.0\.1, a non-public address; DEVUTIL_EGRESS_ALLOW_CIDRS can allow its range\)$/m,
      );
      assert.match(r.stderr, /not set up: git pip apt go /);
      assert.match(r.stdout, /^npm: changed .*\.npmrc/m);
      assert.doesNotMatch(r.stdout, /^(git|pip|apt|go):/m);
      // Only ~/.npmrc changed (and the manifest with its backup came); /etc is untouched.
      const now = snapshot(home);
      for (const [k, v] of before0.home) if (k !== '.npmrc') assert.equal(now.get(k), v, k);
      assert.notEqual(now.get('.npmrc'), before0.home.get('.npmrc'));
      const added = [...now.keys()].filter((k) => !before0.home.has(k) && !/^\.config(\/devutil|$)/.test(k));
      assert.deepEqual(added, []);
      assert.deepEqual(snapshot(root), before0.root);
    } finally {
      await cut.close();
      // The files back as they were for the tests after this one, whatever failed above.
      assert.equal((await setup(['--undo'])).code, 0);
    }
    assert.deepEqual(snapshot(home), before0.home);
  });

  it('refuses to run, changing nothing, when the instance URL cannot be reached', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const app = await buildTestServer({ overrides: { server: { publicUrl: dead } } });
    const script = (await app.inject({ url: '/setup.sh' })).body;
    await app.close();
    const file = join(tempDir('devutil-setup-dead-'), 'setup.sh');
    writeFileSync(file, script);
    const r = await exec('dash', [file, 'git', 'pip', 'npm', 'go', 'hf'], env);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, new RegExp(`cannot reach ${dead}/setup\\.sh .*nothing was changed`));
    assert.deepEqual(snapshot(home), before0.home);
    assert.deepEqual(snapshot(root), before0.root);
  });

  it('refuses when the instance URL answers as something other than this devutil', async () => {
    const other = createServer((_req, res) => res.end('<html>captive portal</html>'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const app = await buildTestServer({ overrides: { server: { publicUrl: url } } });
    const script = (await app.inject({ url: '/setup.sh' })).body;
    await app.close();
    const file = join(tempDir('devutil-setup-other-'), 'setup.sh');
    writeFileSync(file, script);
    const r = await exec('dash', [file, 'git', 'npm'], env);
    other.close();
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /did not answer as the devutil instance .*nothing was changed/);
    assert.deepEqual(snapshot(home), before0.home);
  });
});
