// Syncthing relay section (its own TLS listener, not part of the HTTP server).
import { bool, int } from '../infra/schema.ts';

export const relaySection = {
  enabled: bool(true, { doc: 'run the Syncthing relay (protocol v1) listener' }),
  port: int(22067, { min: 0, max: 65535, doc: 'relay listen port' }),
  statusPort: int(22070, { min: 0, max: 65535, doc: 'strelaysrv-style /status HTTP port (0 = off)' }),
};
