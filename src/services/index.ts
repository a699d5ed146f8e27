// The one explicit list of HTTP utilities, in registration order. Each entry is a Fastify plugin
// that receives the ServiceContext; a service whose config section has enabled=false is skipped.
import type { ServiceDef } from '../infra/context.ts';
import avatar from './avatar/index.ts';
import files from './files/index.ts';
import image from './image/index.ts';
import ip from './ip/index.ts';
import plantuml from './plantuml/index.ts';
import proxy from './proxy/index.ts';
import relay from './relay/index.ts';
import telegram from './telegram/index.ts';
import web from './web/index.ts';

export const SERVICES: ServiceDef[] = [
  { name: 'ip', plugin: ip },
  { name: 'files', plugin: files },
  { name: 'proxy', plugin: proxy },
  { name: 'telegram', plugin: telegram },
  { name: 'plantuml', plugin: plantuml },
  { name: 'image', plugin: image },
  { name: 'relay', plugin: relay },
  { name: 'avatar', plugin: avatar },
  // web stays LAST: its home page shows the utilities registered before it.
  { name: 'web', plugin: web },
];
