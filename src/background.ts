// Listeners that live beside the HTTP server in the same process (the Syncthing relay): a service
// definition's `background`. They start after the HTTP server listens and close with it on
// shutdown. In cluster mode worker 1 owns them.
import type { ServiceContext } from './context.ts';
import { isEnabled } from './services/define.ts';

export interface Background {
  close(): Promise<void>;
}

export interface BackgroundDef {
  name: string;
  start(ctx: ServiceContext): Promise<Background>;
}

/**
 * A listener could not take its address: start-up fails with this one line, as it does when the
 * HTTP port is taken (main.ts), rather than running with a utility silently missing.
 */
export class ListenError extends Error {
  readonly code: string | undefined;
  constructor(what: string, host: string, port: number, err: unknown) {
    super(listenFailure(what, host, port, err));
    this.name = 'ListenError';
    this.code = (err as NodeJS.ErrnoException | null)?.code;
  }
}

/** `cannot listen on [::]:8080: address already in use`, for people (no stack, no errno jargon). */
export function listenFailure(what: string, host: string, port: number, err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const why =
    e?.code === 'EADDRINUSE'
      ? 'address already in use'
      : e?.code === 'EACCES'
        ? 'permission denied'
        : e instanceof Error
          ? e.message
          : String(err);
  const h = host === '' ? '*' : host.includes(':') ? `[${host}]` : host;
  return `cannot listen on ${what}${h}:${port}: ${why}`;
}

/**
 * Starts the listener of every enabled definition that has one, in definition order; when one
 * fails, those already started are closed and the error (a ListenError for a taken port) is thrown.
 */
export async function startBackground(ctx: ServiceContext): Promise<Background[]> {
  const started: Background[] = [];
  try {
    for (const def of ctx.services) {
      if (def.background && isEnabled(ctx.config, def)) started.push(await def.background(ctx));
    }
  } catch (err) {
    await Promise.allSettled(started.map((b) => b.close()));
    throw err;
  }
  return started;
}
