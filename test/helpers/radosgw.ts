// A throwaway single-node Ceph with radosgw on loopback (Debian's ceph-mon, ceph-osd, radosgw), for
// what s3rver does not implement (ListMultipartUploads, AbortMultipartUpload). One monitor, one OSD
// on memstore (objects in RAM, nothing to format), no cephx, radosgw's beast frontend on a free port,
// one S3 user and one bucket. Start-up is a few seconds: share one per test file. A failed start
// prints each daemon's last log lines; DEVUTIL_CEPH_KEEP=<dir> also copies the cluster's directory there.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';
import { tempDir } from './server.ts';
import { toolSkip } from './tools.ts';

const run = promisify(execFile);

export interface RadosgwHandle {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `storage` config overrides that point devutil at this gateway. */
  overrides: Record<string, string | boolean>;
  /** The same as DEVUTIL_STORAGE_* variables, for devutil processes. */
  env: Record<string, string>;
  /** The cluster's directory (ceph.conf, daemon logs): worth printing when a test fails. */
  dir: string;
  stop(): Promise<void>;
}

/** For `describe(name, { skip: radosgwSkip() }, ...)`: the same CI rule as every system tool. */
export function radosgwSkip(): false | string {
  for (const cmd of ['ceph-mon', 'ceph-osd', 'radosgw'])
    if (toolSkip(cmd) !== false) return `${cmd} is not installed`;
  return toolSkip('radosgw-admin');
}

function conf(dir: string, fsid: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = v1:127.0.0.1:${monPort}
mon initial members = a
public addr = 127.0.0.1
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
keyring = ${dir}/keyring
run dir = ${dir}
admin socket = ${dir}/$name.asok
log file = ${dir}/$name.log
pid file = ${dir}/$name.pid
mon data = ${dir}/mon
osd data = ${dir}/osd
# one OSD, one copy; few placement groups so radosgw's pools fit under the per-OSD cap
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 2147483648
# a shared CI disk may be nearly full: that is not this cluster's business
mon data avail crit = 0
mon data avail warn = 0
# each pool radosgw creates is a monitor commit: commit at once instead of every second
paxos propose interval = 0.01
paxos min wait = 0.01
mon osd report timeout = 3600
osd class update on start = false
osd op num shards = 1
osd op num threads per shard = 2
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw data = ${dir}/rgw
rgw thread pool size = 16
rgw enable gc threads = false
rgw enable lc threads = false
rgw enable quota threads = false
rgw dns name = 127.0.0.1
`;
}

/** The last lines of each daemon's log: the directory is gone when the test process exits. */
function logTails(dir: string): string {
  const out: string[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.log'))) {
    const lines = readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').slice(-12);
    out.push(`--- ${f}`, ...lines.map((l) => l.slice(0, 300)));
  }
  return out.join('\n');
}

async function waitHttp(url: string, until: number, procs: ChildProcess[], what: string): Promise<void> {
  for (;;) {
    const dead = procs.find((p) => p.exitCode !== null || p.signalCode !== null);
    if (dead) throw new Error(`${what}: ${dead.spawnargs[0]} exited (${dead.exitCode ?? dead.signalCode})`);
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await r.arrayBuffer();
      if (r.status < 500) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > until) throw new Error(`${what}: no answer from ${url}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts the cluster; a start that fails (a port taken between the check and the bind by a server of
 * another test file, a daemon that died) is stopped whole and made once more from scratch.
 */
export async function startRadosgw(
  bucket = 'devutil-test',
  attemptTimeoutMs = 60_000,
): Promise<RadosgwHandle> {
  try {
    return await startOnce(bucket, attemptTimeoutMs);
  } catch (err) {
    process.stderr.write(`radosgw fixture: first start failed, trying again: ${(err as Error).message}\n`);
    return startOnce(bucket, attemptTimeoutMs);
  }
}

async function startOnce(bucket: string, startTimeoutMs: number): Promise<RadosgwHandle> {
  const dir = tempDir('devutil-ceph-');
  const procs: ChildProcess[] = [];
  let stopping = false;
  // Kills the one-shot commands (ceph, radosgw-admin) still waiting on a cluster being torn down.
  const commands = new AbortController();
  const stop = async () => {
    stopping = true;
    commands.abort();
    // radosgw first (it holds client sessions), then the OSD and the monitor; SIGKILL: nothing here
    // is worth a clean shutdown, and memstore has nothing to flush.
    await Promise.all(
      procs.reverse().map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGKILL');
          }),
      ),
    );
  };
  // A test process that dies before stop() must not leave daemons behind.
  const onExit = () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  process.once('exit', onExit);
  const until = Date.now() + startTimeoutMs;
  const timeout = Math.max(1000, until - Date.now());
  const opts = { timeout, signal: commands.signal };
  try {
    const [monPort, rgwPort] = [await freePort(), await freePort()];
    const fsid = randomUUID();
    const cfg = join(dir, 'ceph.conf');
    writeFileSync(cfg, conf(dir, fsid, monPort, rgwPort));
    writeFileSync(join(dir, 'keyring'), '');
    for (const d of ['mon', 'osd', 'rgw']) mkdirSync(join(dir, d));
    const c = ['-c', cfg];
    const daemon = (cmd: string, args: string[]) => {
      // -f: in the foreground, a child of this process (in the test file's process group).
      const p = spawn(cmd, [...c, '-f', ...args], { stdio: 'ignore' });
      procs.push(p);
      return p;
    };
    await run(
      'monmaptool',
      ['--create', '--fsid', fsid, '--addv', 'a', `[v1:127.0.0.1:${monPort}]`, join(dir, 'monmap')],
      opts,
    );
    await run('ceph-mon', [...c, '--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap')], opts);
    const mon = daemon('ceph-mon', ['-i', 'a']);
    // Everything after this waits on the monitor: if it dies (its port taken), fail now, not at the timeout.
    const monGone = new Promise<never>((_, reject) =>
      mon.once('exit', (code, sig) => reject(new Error(`ceph-mon exited (${code ?? sig})`))),
    );
    monGone.catch(() => {});
    const osdUuid = randomUUID();
    // `ceph osd new` waits for the monitor to answer; the OSD's store is made while it does.
    const [id] = await Promise.race([
      monGone,
      Promise.all([
        run(
          'ceph',
          [...c, '--connect-timeout', String(Math.ceil(timeout / 1000)), 'osd', 'new', osdUuid],
          opts,
        ).then((r) => r.stdout.trim()),
        run('ceph-osd', [...c, '-i', '0', '--mkfs', '--osd-uuid', osdUuid], opts),
      ]),
    ]);
    if (id !== '0') throw new Error(`ceph osd new gave id ${JSON.stringify(id)}, expected 0`);
    // Under load a starting OSD sometimes sends its first monitor command before it has the monitor
    // map (the monitor refuses it: "wrong fsid") and exits; a second start goes through.
    let osdStarts = 0;
    let rgwUp = false;
    const startOsd = () => {
      osdStarts++;
      daemon('ceph-osd', ['-i', '0']).once('exit', () => {
        if (!rgwUp && !stopping && osdStarts < 4) startOsd();
      });
    };
    startOsd();
    const accessKeyId = `AK${randomUUID().replaceAll('-', '').slice(0, 18).toUpperCase()}`;
    const secretAccessKey = randomUUID().replaceAll('-', '') + randomUUID().replaceAll('-', '');
    // radosgw-admin makes radosgw's pools, which wait for the OSD to be up.
    await Promise.race([
      monGone,
      run(
        'radosgw-admin',
        [
          ...c,
          'user',
          'create',
          '--uid',
          'devutil',
          '--display-name',
          'devutil',
          '--access-key',
          accessKeyId,
          '--secret',
          secretAccessKey,
        ],
        opts,
      ),
    ]);
    daemon('radosgw', ['-n', 'client.rgw']);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await waitHttp(
      `${endpoint}/`,
      until,
      procs.filter((p) => p.spawnargs[0] !== 'ceph-osd'),
      'radosgw did not start',
    );
    rgwUp = true;
    const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3');
    const s3 = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey },
    });
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    } finally {
      s3.destroy();
    }
    return {
      endpoint,
      bucket,
      accessKeyId,
      secretAccessKey,
      dir,
      overrides: {
        backend: 's3',
        s3Endpoint: endpoint,
        s3Bucket: bucket,
        s3Region: 'us-east-1',
        s3AccessKeyId: accessKeyId,
        s3SecretAccessKey: secretAccessKey,
        s3ForcePathStyle: true,
      },
      env: {
        DEVUTIL_STORAGE_BACKEND: 's3',
        DEVUTIL_STORAGE_S3_ENDPOINT: endpoint,
        DEVUTIL_STORAGE_S3_BUCKET: bucket,
        DEVUTIL_STORAGE_S3_REGION: 'us-east-1',
        DEVUTIL_STORAGE_S3_ACCESS_KEY_ID: accessKeyId,
        DEVUTIL_STORAGE_S3_SECRET_ACCESS_KEY: secretAccessKey,
        DEVUTIL_STORAGE_S3_FORCE_PATH_STYLE: 'true',
      },
      stop: async () => {
        process.removeListener('exit', onExit);
        await stop();
      },
    };
  } catch (err) {
    await stop();
    if (process.env['DEVUTIL_CEPH_KEEP']) cpSync(dir, process.env['DEVUTIL_CEPH_KEEP'], { recursive: true });
    process.removeListener('exit', onExit);
    throw new Error(`single-node Ceph did not start: ${(err as Error).message}\n${logTails(dir)}`, {
      cause: err,
    });
  }
}
