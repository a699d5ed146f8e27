#!/usr/bin/env node
// The devutil command. TypeScript runs through tsx, so `npm install && npm start` needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
