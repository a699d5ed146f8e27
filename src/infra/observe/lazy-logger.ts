// A per-request child logger that is only built when something is logged at an enabled level.
// Fastify makes a child logger for every request; with redaction and serializers configured, pino's
// child() costs more than the whole caller-IP handler (bench/ip.ts: 58k -> 30k req/s). At the
// usual production levels most requests log nothing, so the child is created on first real use.
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type LogFn = (...args: unknown[]) => void;

export class LazyChild {
  private built: Logger | undefined;

  private readonly parent: Logger;
  private readonly bound: Bindings;
  private readonly opts: ChildLoggerOptions;
  constructor(parent: Logger, bound: Bindings, opts: ChildLoggerOptions = {}) {
    this.parent = parent;
    this.bound = bound;
    this.opts = opts;
  }

  private get real(): Logger {
    this.built ??= this.parent.child(this.bound, this.opts);
    return this.built;
  }

  private emit(level: Level, args: unknown[]): void {
    // A child with its own level must be built to answer for it; otherwise the parent decides.
    const source = this.built ?? (this.opts.level === undefined ? this.parent : this.real);
    if (!source.isLevelEnabled(level)) return;
    (this.real[level] as LogFn)(...args);
  }

  fatal(...args: unknown[]): void {
    this.emit('fatal', args);
  }
  error(...args: unknown[]): void {
    this.emit('error', args);
  }
  warn(...args: unknown[]): void {
    this.emit('warn', args);
  }
  info(...args: unknown[]): void {
    this.emit('info', args);
  }
  debug(...args: unknown[]): void {
    this.emit('debug', args);
  }
  trace(...args: unknown[]): void {
    this.emit('trace', args);
  }
  silent(): void {}

  get level(): string {
    return this.built?.level ?? this.opts.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.built ?? (this.opts.level === undefined ? this.parent : this.real)).isLevelEnabled(level);
  }

  bindings(): Bindings {
    return this.built ? this.built.bindings() : { ...this.parent.bindings(), ...this.bound };
  }

  /** A grandchild stays lazy: same as parent.child(bound).child(more) once built. */
  child(more: Bindings, opts: ChildLoggerOptions = {}): LazyChild {
    return new LazyChild(this.parent, { ...this.bound, ...more }, { ...this.opts, ...opts });
  }
}

/** Fastify childLoggerFactory that adds `extra` bindings and defers building the child. */
export function lazyChildFactory(extra: Bindings = {}) {
  return (parent: unknown, bindings: Bindings, opts: ChildLoggerOptions) =>
    new LazyChild(parent as Logger, { ...bindings, ...extra }, opts) as unknown as Logger;
}
