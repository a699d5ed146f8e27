#!/usr/bin/env node
// The devutil command. TypeScript runs through tsx, so `npm install && npm start` needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
const code = await main(process.argv.slice(2));
// Exit explicitly: a cluster worker's IPC channel (or a reconnecting client) would otherwise keep
// the process alive after a clean shutdown.
process.exit(code);
