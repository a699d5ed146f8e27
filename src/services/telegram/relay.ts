// The telegram utility's working parts, loaded on the first request that needs them (index.ts
// passes them to the route files through lazyImpl): the two upstream clients, Telegram's pacing,
// the recipient store and the Bot API gateway, and the handlers of every route file. The route
// files themselves hold only URLs, schemas and hooks, so a server that never relays a message
// never loads the gateway, the Markdown and notice formatting or the Alertmanager reader.
import type { ServiceContext } from '../../context.ts';
import { FairQueue } from '../../infra/limits/fair-queue.ts';
import { BotApiGateway } from './api-gateway.ts';
import { BotApiClient } from './client.ts';
import type { TelegramMetrics } from './index.ts';
import { Pacing } from './pacing.ts';
import { Pauses } from './pauses.ts';
import type { RecipientHandlerDeps } from './recipient-handlers.ts';
import { RecipientStore } from './recipients.ts';

export { gotifyPublish, jsonPublish, topicPublish } from './notify-handlers.ts';
export {
  alertWithToken,
  listRecipients,
  registerRecipient,
  revokeRecipient,
  sendWithToken,
} from './recipient-handlers.ts';
export { relaySend } from './send.ts';

export interface RelayParts {
  client: BotApiClient;
  /** Long polls: a pool of their own, so a bot waiting for updates never holds a connection another's message needs. */
  polls: BotApiClient;
  pacing: Pacing;
  gateway: BotApiGateway;
  /** What the recipient-token handlers share. */
  recipient: RecipientHandlerDeps;
  close(): Promise<void>;
}

export function buildRelay(ctx: ServiceContext, metrics: TelegramMetrics): RelayParts {
  const cfg = ctx.config.telegram;
  const upstream = {
    apiBase: cfg.apiBase,
    policy: ctx.config.egress,
    connectTimeoutMs: cfg.connectTimeoutMs,
    maxResponseBytes: cfg.maxResponseBytes,
    resolve: ctx.config.egress.resolve,
    ...(cfg.upstreamCa ? { caFile: cfg.upstreamCa } : {}),
  };
  const client = new BotApiClient({ ...upstream, timeoutMs: cfg.timeoutMs, connections: cfg.connections });
  const polls = new BotApiClient({
    ...upstream,
    timeoutMs: cfg.timeoutMs + cfg.longPollMaxSec * 1000,
    connections: cfg.longPolls,
  });
  const pacing = new Pacing(ctx, metrics, new Pauses(ctx.state));
  const recipients = new RecipientStore(ctx.blobs);
  const gateway = new BotApiGateway({
    ctx,
    client,
    polls,
    metrics,
    pacing,
    recipients,
    apiQueue: new FairQueue({
      concurrency: cfg.connections,
      queueLength: cfg.apiQueue,
      clientShare: cfg.clientShare / 100,
    }),
    pollQueue: new FairQueue({
      concurrency: cfg.longPolls,
      queueLength: 0,
      clientShare: cfg.longPollClientShare / 100,
    }),
  });
  return {
    client,
    polls,
    pacing,
    gateway,
    recipient: { cfg, base: ctx.urls.telegram, gateway, client, recipients },
    close: async () => {
      await client.close();
      await polls.close();
    },
  };
}
