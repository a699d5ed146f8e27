// Listeners that live beside the HTTP server in the same process (the Syncthing relay). They start
// after the HTTP server listens and close with it on shutdown. In cluster mode worker 1 owns them.
import type { Config } from './config.ts';
import type { ServiceContext } from './infra/context.ts';
import { relayBackground } from './relay/index.ts';

export interface Background {
  close(): Promise<void>;
}

export interface BackgroundDef {
  name: string;
  enabled(config: Config): boolean;
  start(ctx: ServiceContext): Promise<Background>;
}

export const BACKGROUND: BackgroundDef[] = [relayBackground];
