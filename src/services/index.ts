// The one explicit list of HTTP utilities, in registration order. Each entry is a Fastify plugin
// that receives the ServiceContext; a service whose config section has enabled=false is skipped.
import type { ServiceDef } from '../infra/context.ts';
import ip from './ip/index.ts';
import web from './web/index.ts';

export const SERVICES: ServiceDef[] = [
  { name: 'ip', plugin: ip },
  // web stays LAST: its home page shows the utilities registered before it.
  { name: 'web', plugin: web },
];
