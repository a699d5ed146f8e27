// The one list of utilities, in home page and registration order. Adding one is its folder
// (config.ts, index.ts, definition.ts, optionally page.ts) and one line here: config, server,
// host router, home page and background listeners all read this list.
import admin from './admin/definition.ts';
import avatar from './avatar/definition.ts';
import diagrams from './diagrams/definition.ts';
import files from './files/definition.ts';
import image from './image/definition.ts';
import ip from './ip/definition.ts';
import proxy from './proxy/definition.ts';
import relay from './relay/definition.ts';
import setup from './setup/definition.ts';
import telegram from './telegram/definition.ts';
import web from './web/definition.ts';

export const SERVICES = [
  files,
  ip,
  image,
  telegram,
  proxy,
  diagrams,
  avatar,
  relay,
  setup,
  web,
  admin,
] as const;
