// Reverse proxy section. DEVUTIL_PROXY_HOST gives the proxy its own virtual host.
import { bool, str, url } from '../../infra/schema.ts';

export const proxySection = {
  enabled: bool(true, { doc: 'serve the reverse proxy (under /proxy/ and on its own host)' }),
  host: str('', { doc: 'Host header that routes every path to the proxy (e.g. proxy.example.com)' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public URL of the proxy (default: http(s)://<host> or <public_url>/proxy)',
  }),
};
