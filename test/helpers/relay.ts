// Relay settings for tests that start the Syncthing relay on its own (no server around it): loopback,
// any free port, no status port, strelaysrv's timeouts, small caps; each test overrides what it tests.
import type { RelaySettings } from '../../src/services/relay/relay.ts';

export const RELAY_HOST = '127.0.0.1';

export function testRelaySettings(o: Partial<RelaySettings> = {}): RelaySettings {
  return {
    host: RELAY_HOST,
    port: 0,
    statusPort: 0,
    publicHost: RELAY_HOST,
    publicPort: 0,
    messageTimeoutMs: 60_000,
    networkTimeoutMs: 120_000,
    pingIntervalMs: 60_000,
    perSessionRate: 0,
    globalRate: 0,
    maxSessions: 100,
    maxConnections: 100,
    maxMessageBytes: 1024,
    token: '',
    providedBy: 'test',
    version: 'test',
    ...o,
  };
}
