// /setup.sh as served: shellcheck-clean POSIX sh for every kind of instance, on each host the
// instance answers as, listing only the tools this instance serves, never carrying the proxy's
// secret; bad arguments and a missing secret are refused before anything is read or written.
// The real clients (git, pip, npm, go) against a served script: test/e2e/setup-sh.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { run } from '../../../test/fixtures/proxy/run.ts';
import { startWorld } from '../../../test/fixtures/proxy/world.ts';
import { buildTestServer, type Overrides, tempDir } from '../../../test/helpers/server.ts';
import { hasTool, missing, toolSkip } from '../../../test/helpers/tools.ts';

const SECRET = 'setup-secret-1234';

const scripts = new Map<string, Promise<{ status: number; type: unknown; body: string }>>();

/** The script one configuration serves (each configuration's server is built once). */
function served(overrides: Overrides, host?: string, path = '/setup.sh') {
  const key = JSON.stringify([overrides, host, path]);
  const known = scripts.get(key);
  if (known) return known;
  const s = serve(overrides, host, path);
  scripts.set(key, s);
  return s;
}

async function serve(overrides: Overrides, host: string | undefined, path: string) {
  const app = await buildTestServer({ overrides });
  try {
    const r = await app.inject({ url: path, ...(host ? { headers: { host } } : {}) });
    return { status: r.statusCode, type: r.headers['content-type'], body: r.body };
  } finally {
    await app.close();
  }
}

const setting = (script: string, name: string) =>
  new RegExp(`^${name}='([^']*)'$`, 'm').exec(script)?.[1] ?? assert.fail(`${name} is not set`);

/** A command with exactly this environment, `input` on its stdin. */
const sh = (cmd: string, args: string[], env: Record<string, string>, input = '') =>
  run(cmd, args, { env, exactEnv: true, input });

const VARIANTS: [string, Overrides][] = [
  ['defaults', {}],
  ['every ecosystem', { proxy: { ecosystems: ['oci', 'hf', 'npm', 'go'] } }],
  [
    'https, a proxy host, a secret, no relay',
    {
      server: { publicUrl: 'https://dev.example.com' },
      proxy: { host: 'proxy.example.com', secret: SECRET, ecosystems: ['npm', 'oci'] },
      relay: { enabled: false },
    },
  ],
  ['no proxy', { proxy: { enabled: false } }],
];

describe('setup.sh as served', { timeout: 360_000 }, () => {
  for (const [name, overrides] of VARIANTS)
    it(`passes shellcheck (POSIX sh) and dash -n: ${name}`, { skip: toolSkip('shellcheck') }, async () => {
      const r = await served(overrides);
      assert.equal(r.status, 200);
      assert.equal(r.type, 'text/plain; charset=utf-8');
      const file = join(tempDir('devutil-setup-sc-'), 'setup.sh');
      writeFileSync(file, r.body);
      const sc = await sh('shellcheck', ['--shell=sh', '--severity=style', file], {
        PATH: process.env['PATH'] ?? '',
      });
      assert.equal(sc.code, 0, sc.stdout + sc.stderr);
      if (hasTool('dash', ['-c', ':']) || missing('dash is not installed')) {
        const n = await sh('dash', ['-n', file], { PATH: process.env['PATH'] ?? '' });
        assert.equal(n.code, 0, n.stderr);
      }
    });

  it('lists only the tools this instance serves', async () => {
    const tools = async (o: Overrides) => setting((await served(o)).body, 'DEVUTIL_TOOLS');
    assert.equal(await tools({}), 'git pip apt relay');
    assert.equal(await tools({ proxy: { ecosystems: ['go', 'npm'] } }), 'git pip apt npm go relay');
    assert.equal(await tools({ proxy: { ecosystems: ['oci', 'hf'] } }), 'git pip apt docker hf relay');
    assert.equal(await tools({ proxy: { allow: ['github.com', 'pypi.org'] } }), 'git relay');
    assert.equal(await tools({ proxy: { enabled: false } }), 'relay');
    assert.equal(await tools({ proxy: { enabled: false }, relay: { enabled: false } }), '');
  });

  it('fills in this instance’s URLs, the same on the base host and the proxy host', async () => {
    const o: Overrides = {
      server: { publicUrl: 'https://dev.example.com' },
      proxy: { host: 'proxy.example.com', ecosystems: ['npm', 'go', 'hf', 'oci'] },
    };
    const base = await served(o);
    const onProxyHost = await served(o, 'proxy.example.com');
    assert.equal(onProxyHost.status, 200);
    assert.equal(onProxyHost.body, base.body);
    const s = base.body;
    assert.equal(setting(s, 'DEVUTIL_URL'), 'https://dev.example.com');
    assert.equal(
      setting(s, 'DEVUTIL_CHECK'),
      'https://dev.example.com/setup.sh https://proxy.example.com/setup.sh',
    );
    assert.equal(setting(s, 'GIT_URL'), 'https://proxy.example.com/https://github.com/');
    assert.equal(setting(s, 'PIP_URL'), 'https://proxy.example.com/pypi.org/simple');
    assert.equal(setting(s, 'PIP_TRUSTED_HOST'), '');
    assert.equal(
      setting(s, 'APT_MAP'),
      'deb.debian.org=https://proxy.example.com/deb.debian.org security.debian.org=https://proxy.example.com/security.debian.org',
    );
    assert.equal(setting(s, 'NPM_URL'), 'https://proxy.example.com/npm/');
    assert.equal(setting(s, 'GO_URL'), 'https://proxy.example.com/go');
    assert.equal(setting(s, 'HF_URL'), 'https://proxy.example.com/hf');
    assert.equal(setting(s, 'DOCKER_MIRROR'), 'https://proxy.example.com');
    assert.equal(setting(s, 'DOCKER_INSECURE'), '');
    assert.match(setting(s, 'RELAY_URI'), /^relay:\/\/dev\.example\.com:22067\/\?id=/);
    // The file each tool's way out is checked with, through the URL that tool is given.
    assert.equal(
      setting(s, 'GIT_PROBE'),
      'GET https://proxy.example.com/https://github.com/git/git.git/info/refs?service=git-upload-pack Git-Protocol: version=2',
    );
    assert.equal(setting(s, 'PIP_PROBE'), 'GET https://proxy.example.com/pypi.org/simple/pip/');
    assert.equal(setting(s, 'APT_PROBE'), 'GET https://proxy.example.com/deb.debian.org/debian/README');
    assert.equal(setting(s, 'NPM_PROBE'), 'GET https://proxy.example.com/npm/-/ping');
    assert.equal(setting(s, 'GO_PROBE'), 'GET https://proxy.example.com/go/rsc.io/quote/@v/list');
    assert.equal(setting(s, 'HF_PROBE'), 'GET https://proxy.example.com/hf/api/models/openai-community/gpt2');
    assert.match(
      setting(s, 'DOCKER_PROBE'),
      /^HEAD https:\/\/proxy\.example\.com\/v2\/library\/hello-world\/manifests\/latest Accept: /,
    );
    // Over plain http, pip needs the host trusted and Docker the registry marked insecure.
    const plain = (
      await served({ server: { publicUrl: 'http://10.0.0.5:8080' }, proxy: { ecosystems: ['oci'] } })
    ).body;
    assert.equal(setting(plain, 'PIP_TRUSTED_HOST'), '10.0.0.5');
    assert.equal(setting(plain, 'DOCKER_INSECURE'), '10.0.0.5:8080');
    assert.equal((await served({}, undefined, '/proxy/setup.sh')).status, 200);
  });

  it('never carries the proxy secret, only its placeholder', async () => {
    const s = (await served({ proxy: { secret: SECRET, ecosystems: ['npm'] } })).body;
    assert.ok(!s.includes(SECRET));
    assert.equal(setting(s, 'DEVUTIL_PRIVATE'), '1');
    assert.match(setting(s, 'NPM_URL'), /\/proxy\/t\/<SECRET>\/npm\/$/);
    assert.match(setting(s, 'NPM_PROBE'), /\/proxy\/t\/<SECRET>\/npm\/-\/ping$/);
  });

  const HOSTILE: [string, string[], Record<string, string>, number, RegExp][] = [
    ['an unknown tool', ['git', 'cargo'], {}, 1, /unknown tool: cargo/],
    ['a tool name with a glob', ['*'], {}, 1, /unknown tool: \*/],
    ['an unknown option', ['--force', 'git'], {}, 1, /unknown option: --force/],
    ['no tool at all', [], {}, 2, /Tools this instance serves: git pip apt relay/],
    ['a private proxy without the secret', ['git'], {}, 1, /is private: run with DEVUTIL_PROXY_SECRET/],
    ['a secret with shell characters', ['git'], { DEVUTIL_PROXY_SECRET: 'a|b;$(id)' }, 1, /characters/],
  ];
  for (const [what, args, extra, code, message] of HOSTILE)
    it(`refuses ${what} (exit ${code}) and writes nothing`, {
      skip: toolSkip('dash', ['-c', ':']),
    }, async () => {
      const secret = /secret|private/.test(what) ? { proxy: { secret: SECRET } } : {};
      const script = (await served(secret)).body;
      const home = tempDir('devutil-setup-hostile-');
      const r = await sh(
        'dash',
        ['-s', '--', ...args],
        { PATH: process.env['PATH'] ?? '', HOME: home, ...extra },
        script,
      );
      assert.equal(r.code, code, r.stdout + r.stderr);
      assert.match(r.stderr, message);
      assert.deepEqual(readdirSync(home), []);
    });

  it('fills in the secret from the environment; --dry-run changes nothing', {
    skip: toolSkip('dash', ['-c', ':']),
  }, async () => {
    // The fake internet serves the files the script checks each tool with, through devutil.
    const w = await startWorld({ git: false, overrides: { proxy: { secret: SECRET, ecosystems: ['npm'] } } });
    const srv = w.proxy;
    try {
      const script = (await (await fetch(`${srv.url}/setup.sh`)).text()) as string;
      const home = tempDir('devutil-setup-private-');
      const env = {
        PATH: process.env['PATH'] ?? '',
        HOME: home,
        DEVUTIL_PROXY_SECRET: SECRET,
        GIT_CONFIG_NOSYSTEM: '1',
      };
      const r = await sh('dash', ['-s', '--', '--dry-run', 'git', 'npm'], env, script);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`\\+registry=${srv.url}/proxy/t/${SECRET}/npm/`));
      assert.ok(r.stdout.includes(`${srv.url}/proxy/t/${SECRET}/https://github.com/`));
      assert.deepEqual(readdirSync(home), []);
      assert.ok(w.net.seen.some((x) => x.host === 'registry.npmjs.org' && x.url === '/-/ping'));
    } finally {
      await w.close();
    }
  });

  it('keeps the rest of an existing pip.conf; --undo --dry-run changes nothing; an edit made since is kept aside', {
    skip: toolSkip('dash', ['-c', ':']),
  }, async () => {
    const w = await startWorld({ git: false, overrides: { proxy: { ecosystems: ['npm', 'hf'] } } });
    const srv = w.proxy;
    try {
      const script = await (await fetch(`${srv.url}/setup.sh`)).text();
      const home = tempDir('devutil-setup-pip-');
      mkdirSync(join(home, '.config/pip'), { recursive: true });
      const PIP =
        '[global]\ntimeout = 60\nindex-url = https://pypi.mirror.example/simple\ntrusted-host = pypi.mirror.example\n\n[install]\nindex-url = https://other.example/simple\n';
      writeFileSync(join(home, '.config/pip/pip.conf'), PIP);
      writeFileSync(join(home, '.npmrc'), 'registry=https://registry.mirror.example/\n');
      const env = { PATH: process.env['PATH'] ?? '', HOME: home };
      const setup = (args: string[]) => sh('dash', ['-s', '--', ...args], env, script);
      const r = await setup(['pip', 'npm', 'hf']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const index = `${srv.url}/proxy/pypi.org/simple`;
      assert.equal(
        readFileSync(join(home, '.config/pip/pip.conf'), 'utf8'),
        `[global]\nindex-url = ${index}\ntimeout = 60\ntrusted-host = pypi.mirror.example 127.0.0.1\n\n[install]\nindex-url = ${index}\n`,
      );
      assert.equal(
        readFileSync(join(home, '.profile'), 'utf8'),
        `# >>> devutil setup >>>\nexport HF_ENDPOINT='${srv.url}/proxy/hf'\n# <<< devutil setup <<<\n`,
      );
      // The user changes ~/.npmrc after the run.
      const edited = `registry=${srv.url}/proxy/npm/\nsave-exact=true\n`;
      writeFileSync(join(home, '.npmrc'), edited);
      const dry = await setup(['--undo', '--dry-run']);
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, /\.npmrc changed after that run: would keep a copy/);
      assert.match(dry.stdout, /would remove .*\.profile \(it did not exist\)/);
      assert.equal(readFileSync(join(home, '.npmrc'), 'utf8'), edited);
      const undo = await setup(['--undo']);
      assert.equal(undo.code, 0, undo.stderr);
      assert.equal(readFileSync(join(home, '.config/pip/pip.conf'), 'utf8'), PIP);
      assert.equal(readFileSync(join(home, '.npmrc'), 'utf8'), 'registry=https://registry.mirror.example/\n');
      assert.deepEqual(readdirSync(home).sort(), ['.config', '.npmrc']);
      const kept = readdirSync(join(home, '.config/devutil'));
      assert.equal(kept.length, 1);
      assert.match(kept[0] ?? '', /^changed-after-setup-.*-\.npmrc$/);
      assert.equal(readFileSync(join(home, '.config/devutil', kept[0] ?? ''), 'utf8'), edited);
    } finally {
      await w.close();
    }
  });

  it('shows the home page section with the tools this instance serves', async () => {
    const section = async (o: Overrides) =>
      /<section id="setup"[\s\S]*?<\/section>/.exec((await served(o, undefined, '/')).body)?.[0] ?? '';
    const some = await section({ proxy: { allow: ['github.com'], ecosystems: ['go'] } });
    assert.match(some, /sh -s -- --dry-run git go relay</);
    assert.match(some, /Only some, e\.g\. git and go/);
    assert.match(
      await section({ proxy: { enabled: false }, relay: { enabled: false } }),
      /serves none of the tools/,
    );
  });
});
