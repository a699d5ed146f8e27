// GET /rest/api/v1/ip/port/<port>: the caller's own port, open, closed or filtered, with the time
// the answer took (port-check.ts). The address is always the caller's: the route takes no other,
// and refuses a request that tries to name one rather than quietly ignoring it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { badRequest, forbidden, unavailable } from '../../infra/http/errors.ts';
import { QueueFull } from '../../infra/limits/fair-queue.ts';
import { wantsText } from './handlers.ts';
import { PortCheck } from './port-check.ts';
import { scopeOf } from './scope.ts';

type Route = { Params: { port: string }; Querystring: { format?: 'json' | 'text' } };
type Req = FastifyRequest<Route>;

const portData = {
  type: 'object',
  required: ['ip', 'port', 'state', 'open', 'ms'],
  properties: {
    ip: { type: 'string', description: 'the caller, the only address this checks' },
    port: { type: 'integer' },
    state: { type: 'string', enum: ['open', 'closed', 'filtered'] },
    open: { type: 'boolean' },
    ms: { type: 'integer', description: 'milliseconds to the answer, or to the timeout' },
  },
} as const;

export function portRoute(app: FastifyInstance, ctx: ServiceContext): void {
  const cfg = ctx.config.ip;
  const checks = new PortCheck({ timeoutMs: cfg.portCheckTimeoutMs, concurrency: cfg.portCheckConcurrency });
  app.addHook('onClose', async () => checks.close());
  const limit = cfg.portCheckRateLimit;

  app.get<Route>(
    '/rest/api/v1/ip/port/:port',
    {
      ...(limit.limit > 0 ? { onRequest: ctx.limiter.hook('ip-port', limit) } : {}),
      schema: {
        summary: "Whether a TCP port of the caller's own address is open, closed or filtered",
        description:
          'One TCP handshake to the address the request came from (never any other), within DEVUTIL_IP_PORT_CHECK_TIMEOUT_MS; rate limited by DEVUTIL_IP_PORT_CHECK_RATE_LIMIT.',
        tags: ['ip'],
        params: {
          type: 'object',
          required: ['port'],
          properties: { port: { type: 'string', pattern: '^[0-9]{1,5}$', description: '1 to 65535' } },
        },
        querystring: {
          type: 'object',
          properties: {
            format: { type: 'string', enum: ['json', 'text'], description: 'text: the state alone' },
          },
        },
        response: {
          200: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['status', 'message', 'data'],
                  properties: {
                    status: { type: 'integer', enum: [1] },
                    message: { type: 'string' },
                    data: portData,
                  },
                },
              },
              'text/plain': {
                schema: { type: 'string', description: 'open, closed or filtered and a newline' },
              },
            },
          },
        },
      },
    },
    async (req: Req, reply: FastifyReply) => {
      reply.header('cache-control', 'no-store');
      const port = Number(req.params.port);
      if (!Number.isInteger(port) || port < 1 || port > 65_535)
        throw badRequest('the port must be a number from 1 to 65535', 'BAD_PORT');
      const extra = Object.keys(req.query).filter((k) => k !== 'format');
      if (extra.length)
        throw badRequest(
          `the port check takes no ${extra[0]}: it checks the address the request comes from, and only that one`,
          'BAD_PORT_QUERY',
        );
      const ip = req.clientIp;
      const scope = scopeOf(ip);
      if (scope !== 'public' && !cfg.portCheckNonPublic)
        throw forbidden(
          `your address ${ip} is ${scope}: only public addresses are checked here (DEVUTIL_IP_PORT_CHECK_NON_PUBLIC)`,
          'PORT_CHECK_NOT_PUBLIC',
        );
      let r: Awaited<ReturnType<PortCheck['check']>>;
      try {
        r = await checks.check(req.clientKey, ip, port);
      } catch (err) {
        if (err instanceof QueueFull) throw unavailable('busy checking ports, try again shortly', 1);
        throw err;
      }
      req.log.info({ port, state: r.state, ms: r.ms }, 'port checked');
      if (wantsText(req)) return reply.type('text/plain; charset=utf-8').send(`${r.state}\n`);
      return {
        status: 1,
        message: 'success',
        data: { ip, port, state: r.state, open: r.state === 'open', ms: r.ms },
      };
    },
  );
}
