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

/** Starts the listener of every enabled definition that has one, in definition order. */
export async function startBackground(ctx: ServiceContext): Promise<Background[]> {
  const started: Background[] = [];
  for (const def of ctx.services) {
    if (def.background && isEnabled(ctx.config, def)) started.push(await def.background(ctx));
  }
  return started;
}
