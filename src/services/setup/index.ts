// GET /setup.sh on every host this instance answers as: the base host, and the own host of each
// utility that has one (a request there is routed under the utility's mount, hence /proxy/setup.sh).
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { isEnabled } from '../define.ts';
import { ECOSYSTEMS } from '../proxy/ecosystems/index.ts';
import { renderScript, scriptValues } from './script.ts';

const setup: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const on = (name: string) => ctx.services.some((d) => d.name === name && isEnabled(ctx.config, d));
  const input = {
    config: ctx.config,
    urls: ctx.urls,
    version: ctx.version,
    proxy: on('proxy'),
    relay: on('relay'),
    ecosystems: ECOSYSTEMS,
  };
  const paths = [
    '',
    ...ctx.services.filter((d) => d.host && isEnabled(ctx.config, d)).map((d) => d.host?.mount),
  ];
  for (const mount of paths)
    app.get(
      `${mount}/setup.sh`,
      {
        schema: {
          summary: mount
            ? `The same set-up script, on the ${mount.slice(1)} host (its /setup.sh)`
            : 'Set-up script for git, pip, apt, npm, go, Docker, Hugging Face and Syncthing',
          description:
            'POSIX sh: `curl -fsSL <base>/setup.sh | sh -s -- git pip npm` writes each tool’s own config to use this instance (--dry-run, --undo).',
        },
      },
      async (_req, reply) => {
        // Rendered per request: the relay's device ID appears once the relay has made its identity.
        const body = renderScript(scriptValues(input));
        return reply
          .header('content-type', 'text/plain; charset=utf-8')
          .header('cache-control', 'no-cache')
          .send(body);
      },
    );
};

export default setup;
