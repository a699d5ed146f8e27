// Diagram rendering section. DEVUTIL_PLANTUML_HOST gives it its own virtual host.
import { bool, str, url } from '../../infra/schema.ts';

export const plantumlSection = {
  enabled: bool(true, { doc: 'serve the PlantUML server API (under /plantuml/ and on its own host)' }),
  host: str('', { doc: 'Host header that routes every path to the PlantUML API' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public URL of the PlantUML API (default: http(s)://<host> or <public_url>/plantuml)',
  }),
};
