// The worker JVM's class-data sharing archive (a dynamic AppCDS archive): PlantUML's classes parsed,
// verified and laid out once by a training run, then mapped by every worker start instead of being
// loaded from the 30 MB jar. One archive per (jar, Java, worker class), kept beside the worker; servers
// that share the directory (cluster workers, a test run's servers) make it once between them.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { minimalEnv } from './java.ts';

/** A failed training or an archive a worker could not start with; past this many, none is used. */
const MAX_FAILURES = 2;
/** A training run renders a dozen small diagrams; far past that, it is stuck. */
const TRAIN_TIMEOUT_MS = 5 * 60_000;
/** With no archive yet, how often current() looks for one another process may have made meanwhile. */
const LOOK_AGAIN_MS = 5000;

export interface ArchiveOptions {
  /** The worker's directory (its name already covers the worker source, jar path and Java version). */
  dir: string;
  /** What else the archive depends on: the jar's size and mtime, the Java home. */
  key: readonly string[];
  java: string;
  /** The worker's command line with -XX:ArchiveClassesAtExit=`out` and the training switch. */
  trainArgs(out: string): string[];
  log: Logger;
}

export class ClassArchive {
  private readonly o: ArchiveOptions;
  private readonly id: string;
  /** The usable archive (undefined: not looked up yet; null: none). */
  private found: string | null | undefined;
  private failures = 0;
  private training: ChildProcess | null = null;
  private lookAgainAt = 0;
  private closed = false;

  constructor(o: ArchiveOptions) {
    this.o = o;
    this.id = createHash('sha256').update(JSON.stringify(o.key)).digest('hex').slice(0, 16);
  }

  /**
   * The archive to start a worker with, if there is a sound one. Its size is in its name: a file
   * cut short (a copy, a full disk) crashes the JVM that maps it, so it is never handed out.
   */
  current(): string | undefined {
    if (this.failures >= MAX_FAILURES) return undefined;
    const again = this.found === null && !this.training && Date.now() >= this.lookAgainAt;
    if (this.found === undefined || again) {
      this.found = null;
      this.lookAgainAt = Date.now() + LOOK_AGAIN_MS;
      for (const f of safeList(this.o.dir)) {
        const m = /^cds-([0-9a-f]{16})-(\d+)\.jsa$/.exec(f);
        if (!m) continue;
        const path = join(this.o.dir, f);
        if (m[1] === this.id && sizeOf(path) === Number(m[2])) this.found = path;
        else rmSync(path, { force: true }); // another jar or Java, or damaged
      }
    }
    return this.found ?? undefined;
  }

  /** A worker started with `path` died before it said hello: drop the archive and make a new one. */
  reject(path: string): void {
    if (path !== this.found) return; // already dropped (several workers started with it)
    this.o.log.warn({ path }, 'plantuml class-data archive unusable: workers start without it');
    rmSync(path, { force: true });
    this.found = null;
    this.failures++;
    this.train();
  }

  /**
   * Makes the archive in the background when there is none: one JVM at the lowest CPU priority,
   * so serving workers keep the cores; they use the archive from their next start.
   */
  train(): void {
    if (this.closed || this.training || this.current() || this.failures >= MAX_FAILURES) return;
    // Another process sharing the directory is making it: current() finds it once it is there.
    if (!this.lock()) return;
    const tmp = join(this.o.dir, `cds-${this.id}.tmp-${process.pid}`);
    const started = Date.now();
    let err = '';
    const child = spawn(this.o.java, this.o.trainArgs(tmp), {
      cwd: this.o.dir,
      env: minimalEnv(),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.training = child;
    if (child.pid !== undefined) {
      try {
        setPriority(child.pid, 19);
      } catch {}
    }
    child.stderr.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4096); // the reason is at the end, after the JVM's notes
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), TRAIN_TIMEOUT_MS);
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.training = null;
      rmSync(this.lockFile(), { force: true });
      const bytes = ok ? sizeOf(tmp) : 0;
      if (bytes > 0 && !this.closed) {
        const path = join(this.o.dir, `cds-${this.id}-${bytes}.jsa`);
        renameSync(tmp, path);
        this.found = path;
        this.o.log.info({ ms: Date.now() - started, bytes }, 'plantuml class-data archive made');
        return;
      }
      rmSync(tmp, { force: true });
      if (this.closed) return;
      this.failures++;
      // The JVM's own reason (no base archive, a read-only directory...): its last lines.
      this.o.log.warn(
        { reason: err.trim().split('\n').slice(-3).join(' | ') },
        'plantuml class-data archive failed',
      );
    };
    child.on('error', () => done(false));
    child.on('exit', (code) => done(code === 0));
  }

  private lockFile(): string {
    return join(this.o.dir, `cds-${this.id}.lock`);
  }

  /**
   * Claims the training for this process: a lock file naming its pid, taken over when its process
   * is gone or it is older than a training may take (a process of another pid namespace).
   */
  private lock(): boolean {
    const file = this.lockFile();
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(file, String(process.pid), { flag: 'wx' });
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return false; // a read-only directory
      }
      let owner = 0;
      try {
        owner = Number(readFileSync(file, 'utf8'));
      } catch {} // removed meanwhile: try again
      const fresh = Date.now() - (mtimeOf(file) ?? 0) < TRAIN_TIMEOUT_MS + 60_000;
      if (owner > 0 && owner !== process.pid && alive(owner) && fresh) return false;
      rmSync(file, { force: true });
    }
    return false;
  }

  /** Stops a training run (server shutdown); resolves once it is gone. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.training;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, another user's
  }
}

function mtimeOf(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
