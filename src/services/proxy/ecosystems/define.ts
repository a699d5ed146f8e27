// What an ecosystem profile is to the proxy: a name in DEVUTIL_PROXY_ECOSYSTEMS, the paths under
// the proxy it answers, its plugin (loaded only when enabled) and its set-up lines for the home
// page and the docs. ecosystems/index.ts lists them; ecosystems/<name>/ holds each one.
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HTTPMethods,
  RouteShorthandOptions,
} from 'fastify';
import type { Config } from '../../../config.ts';
import type { PublicUrls, ServiceContext } from '../../../context.ts';
import type { Egress } from '../../../infra/egress/client.ts';
import type { Envelope } from '../../../infra/http/envelopes.ts';
import type { ProxyCache, ProxyStore } from '../cache.ts';
import type { ProxyGate } from '../exchange.ts';
import type { ForwardOptions } from '../forward.ts';

/** One copyable set-up snippet: what it configures and the text, with this instance's own URLs. */
export interface SetupLine {
  /** e.g. 'Docker (/etc/docker/daemon.json)'. */
  label: string;
  text: string;
}

export interface SetupInput {
  urls: PublicUrls;
  config: Config;
  /**
   * The proxy's public URL as clients put it in their settings (../clients.ts proxyPrefix):
   * `urls.proxy`, plus `/t/<SECRET>` when DEVUTIL_PROXY_SECRET is set (the placeholder, never the secret).
   */
  proxy: string;
}

export interface EcosystemDef {
  /** Its name in DEVUTIL_PROXY_ECOSYSTEMS, folder ecosystems/<name>/ and log field `eco`. */
  readonly name: string;
  /** e.g. 'Container registries'. */
  readonly title: string;
  /** One sentence for the home page. */
  readonly summary: string;
  /**
   * Path prefixes under the proxy this ecosystem answers, e.g. '/v2' for /proxy/v2/... (and /v2/...
   * on the proxy's own host). A first segment without a dot never names an upstream host, so these
   * never shadow the host-path form.
   */
  readonly paths: readonly string[];
  /**
   * Also answer the paths at the root of the base host: container clients address a registry by
   * host name alone and always ask for /v2/ at its root.
   */
  readonly atRoot?: boolean;
  /**
   * True when the ecosystem enforces DEVUTIL_PROXY_SECRET itself (registries: a password at their
   * token endpoint). Otherwise its routes live under /t/<secret>/ when a secret is set.
   */
  readonly ownAccess?: boolean;
  /** Error envelope of its paths (default: the proxy's one line of text). */
  readonly envelope?: Envelope;
  readonly load: () => Promise<{ default: EcosystemPlugin }>;
  /** Set-up lines for clients, for the home page and docs/proxy.md. */
  setup(p: SetupInput): SetupLine[];
  /**
   * The one setting setup.sh (services/setup/) writes for it: the tool's name there and the URL
   * that setting names (npm's registry, GOPROXY, HF_ENDPOINT, Docker's registry mirror). The set-up
   * lines above use the same function.
   */
  readonly script?: { readonly tool: string; url(p: SetupInput): string };
}

export type EcosystemHandler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface EcosystemRoute {
  method: HTTPMethods | HTTPMethods[];
  /** Under one of the ecosystem's paths, e.g. '/v2/*'. */
  url: string;
  summary: string;
  handler: EcosystemHandler;
  config?: RouteShorthandOptions['config'];
}

/** What an ecosystem's plugin gets from the proxy: its mechanisms, never a copy of them. */
export interface EcosystemApi {
  app: FastifyInstance;
  ctx: ServiceContext;
  /** Registers a route at each place the ecosystem is served, behind the proxy's access checks. */
  route(r: EcosystemRoute): void;
  /**
   * The request's path and query after the mount (and the secret prefix), raw as sent:
   * `/v2/library/alpine/manifests/3.20`. Parse this, never a decoded form.
   */
  rawPath(req: FastifyRequest): string;
  /** Budget check, per-client concurrency, exchange log line, metered send. */
  gate: ProxyGate;
  /** The proxy's outbound client: address guard on every hop, timeouts, keep-alive, test resolves. */
  agent: Egress;
  /** Redirect following, header filtering and size caps of the host-path form (forward.ts). */
  fwd: ForwardOptions;
  /** The proxy's shared cache (memory + disk, LRU, byte budget); null when DEVUTIL_PROXY_CACHE_MAX_BYTES=0. */
  store: ProxyStore | null;
  /**
   * The host-path form's cache policy over that store (immutable and revalidated classes, one fill
   * for concurrent misses, Range and conditionals from complete objects), keyed by upstream URL;
   * null when the cache is off.
   */
  cache: ProxyCache | null;
}

export type EcosystemPlugin = (api: EcosystemApi) => Promise<void>;

export function defineEcosystem<const D extends EcosystemDef>(def: D): D {
  return def;
}
