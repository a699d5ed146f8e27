// The OpenAPI description (/openapi.json) and its page (/docs): document metadata, one tag per
// utility (taken from the service a route was registered by, so a route cannot be filed under the
// wrong one), a request body that exists only in the documentation (multipart uploads are read as
// a stream, not validated as a body), and the Swagger UI options: devutil's name and icon, and a
// CSP the page actually keeps (no inline styles, no https upgrade that would break plain-http
// self-hosting).
import type { FastifyDynamicSwaggerOptions, SwaggerTransform } from '@fastify/swagger';
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import type { FastifySchema } from 'fastify';
import type { PublicUrlsOf } from './hosts.ts';

/** One tag per utility, in the order of the home page; `ops` for health, readiness and metrics. */
export const TAGS: { name: string; description: string }[] = [
  { name: 'files', description: 'File storage: upload under a key, download under the original name' },
  { name: 'ip', description: 'The caller’s public address' },
  { name: 'image', description: 'Random and stable placeholder images' },
  { name: 'telegram', description: 'Send Telegram bot messages through this server' },
  { name: 'proxy', description: 'Allow-listed reverse proxy for GitHub, Debian, PyPI and Gravatar' },
  {
    name: 'diagrams',
    description:
      "Diagrams: the PlantUML server API on the real engine, and Kroki's API for every other language",
  },
  { name: 'avatar', description: 'Gravatar-compatible avatars' },
  { name: 'relay', description: 'Syncthing relay address and live counters' },
  {
    name: 'setup',
    description: 'A set-up script that points git, pip, apt, npm, go and Docker at this server',
  },
  { name: 'web', description: 'The home page and its assets' },
  { name: 'admin', description: 'The operator’s dashboard (only with DEVUTIL_ADMIN_TOKEN set)' },
  { name: 'ops', description: 'Liveness, readiness and Prometheus metrics' },
];

type Schema = FastifySchema & Record<string, unknown>;
type Transform = SwaggerTransform;

/**
 * Tags a route by the utility that registered it (route config `svc`, set in server.ts) and
 * declares the path parameters a route does not validate itself (OpenAPI requires them).
 */
const tagBySvc: Transform = ({ schema, url, route }) => {
  const svc = (route.config as { svc?: string } | undefined)?.svc ?? 'ops';
  let s = (schema ?? {}) as Schema;
  if (!s.tags) s = { ...s, tags: [svc] };
  const names = [...url.matchAll(/:([A-Za-z_][\w]*)/g)].map((m) => m[1] as string);
  if (names.length && !s.params) {
    const properties = Object.fromEntries(names.map((n) => [n, { type: 'string' }]));
    s = { ...s, params: { type: 'object', required: names, properties } };
  }
  return { schema: s, url };
};

/**
 * Route config that adds `extra` to the route's documentation only (never to its validation),
 * optionally under a friendlier path (`/proxy/{target}` for a wildcard).
 */
export function docOnly(extra: Schema, url?: string): { swaggerTransform: Transform } {
  return {
    swaggerTransform: (args) => {
      const t = tagBySvc(args);
      return { schema: { ...(t.schema as Schema), ...extra }, url: url ?? t.url };
    },
  };
}

export function openapiOptions(
  urls: PublicUrlsOf<'proxy' | 'diagrams' | 'avatar'>,
  version: string,
): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'devutil',
        version,
        description: `Developer utilities in one server. Examples for every utility are on the [home page](${urls.base}/); this is the reference for each route. The proxy, PlantUML and avatar utilities also answer on their own hosts when configured: ${urls.proxy}, ${urls.diagrams}, ${urls.avatar}/avatar.`,
      },
      // Relative first: "Try it out" then calls the address the page was opened on (same origin,
      // so the page's CSP allows it); the public URL is listed for generated clients.
      servers: [
        { url: '/', description: 'this server, as you reached it' },
        ...(urls.base ? [{ url: urls.base, description: 'public URL' }] : []),
      ],
      tags: TAGS,
    },
    transform: tagBySvc,
  };
}

/** The docs page's CSP: everything from this origin, styles included (the default Swagger logo's
 * inline <style> is never rendered: the layout has no top bar). */
export const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self' data: blob:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
].join('; ');

const HEADER_JS = `// devutil's header above the reference: the name, a link home, and the page's purpose.
(function () {
  var h = document.createElement('header');
  h.className = 'devutil-top';
  var a = document.createElement('a');
  a.href = '/';
  a.className = 'devutil-brand';
  var img = document.createElement('img');
  img.src = '/docs/static/theme/devutil.svg';
  img.alt = '';
  img.width = 28;
  img.height = 28;
  a.append(img, document.createTextNode('devutil'));
  var s = document.createElement('span');
  s.textContent = 'API reference';
  h.append(a, s);
  document.body.prepend(h);
})();
`;

const HEADER_CSS = `.devutil-top{display:flex;align-items:center;gap:1rem;padding:.75rem 1.25rem;background:#1d2433;color:#e8ecf4;font:600 1rem/1.2 system-ui,sans-serif}
.devutil-brand{display:inline-flex;align-items:center;gap:.5rem;color:#fff;text-decoration:none;font-size:1.25rem}
.devutil-brand img{display:block}
.devutil-top span{color:#c5cde0;font-weight:400}
`;

export function swaggerUiOptions(faviconSvg: string): FastifySwaggerUiOptions {
  return {
    routePrefix: '/docs',
    staticCSP: DOCS_CSP,
    // BaseLayout: no Swagger top bar (its logo carries an inline <style> the CSP refuses, and its
    // "Explore" box would let the page load any URL).
    uiConfig: { deepLinking: true, layout: 'BaseLayout', displayRequestDuration: true },
    theme: {
      title: 'devutil API reference',
      favicon: [
        { filename: 'devutil.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: faviconSvg },
      ],
      js: [{ filename: 'devutil-header.js', content: HEADER_JS }],
      css: [{ filename: 'devutil.css', content: HEADER_CSS }],
    },
  };
}
