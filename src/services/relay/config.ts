// Syncthing relay section (its own TLS listener, not part of the HTTP server). Limits keep strelaysrv's
// names and defaults (docs/protocols/syncthing-relay.md §13); durations are held in milliseconds and accept
// Go style ("1m0s", "90s", "500ms") or, as before, plain seconds.
import { bool, budget, bytes, duration, HOST_PORT, int, list, str } from '../../infra/config/schema.ts';

export const relaySection = {
  enabled: bool(true, { doc: 'run the Syncthing relay (protocol v1) listener' }),
  port: int(22067, { min: 0, max: 65535, doc: 'relay listen port' }),
  statusPort: int(22070, { min: 0, max: 65535, doc: 'strelaysrv-style /status HTTP port (0 = off)' }),
  host: str('', {
    doc: 'listen address for the relay and status ports (empty = every IPv6 and IPv4 address, IPv4 only without IPv6)',
  }),
  extAddress: str('', {
    // host[:port] as it goes into the relay URI devices are told (pages, setup.sh); an IPv6
    // address bracketed or bare.
    pattern: new RegExp(`${HOST_PORT.source}|^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$`),
    hint: 'host[:port] or [v6]:port',
    doc: 'host[:port] advertised in the relay URI (empty = host of the public URL and the listen port)',
  }),
  messageTimeout: duration(60_000, {
    unit: 'ms',
    plain: 's',
    min: 100,
    doc: 'deadline from accept for the first whole message in either mode (TLS handshake included), and for session pairing (a plain number is seconds)',
  }),
  networkTimeout: duration(120_000, {
    unit: 'ms',
    plain: 's',
    min: 100,
    doc: 'protocol-mode silence limit; a paired session with no bytes either way for this long is closed (a plain number is seconds)',
  }),
  pingInterval: duration(60_000, {
    unit: 'ms',
    plain: 's',
    min: 100,
    doc: 'Ping to joined clients; deadline to join (a plain number is seconds)',
  }),
  perSessionRate: bytes(0, { doc: 'bytes/s per session, both directions together (0 = unlimited)' }),
  globalRate: bytes(0, { doc: 'bytes/s for the whole relay (0 = unlimited)' }),
  clientBytes: budget('off', {
    doc: 'bytes relayed per client address (sent plus received) per window, e.g. 50GiB/day; over it new sessions are refused',
  }),
  totalBytes: budget('off', {
    doc: 'bytes the relay carries per window, e.g. 3TiB/month; over it joins get RelayFull and new sessions are refused',
  }),
  maxSessions: int(10_000, { min: 1, doc: 'sessions (pending or active) at once; more get RelayFull' }),
  maxConnections: int(16_000, {
    min: 1,
    doc: 'protocol connections plus active pipe directions; over it joins get RelayFull',
  }),
  networkBuffer: bytes(65_536, {
    min: 4096,
    doc: 'read buffer of each session direction, two per active session (strelaysrv -network-buffer); larger costs less CPU per byte',
  }),
  maxMessageBytes: int(1024, { min: 64, max: 65_536, doc: 'frame payload cap (strelaysrv: 1024)' }),
  token: str('', { secret: true, doc: 'if set, joining requires this token (relay URI &token=)' }),
  providedBy: str('', { doc: 'free text shown in /status (strelaysrv -provided-by)' }),
  pools: list([], {
    item: (s) => (/^https:\/\/[^\s/?#]+(\/\S*)?$/.test(s) ? null : 'expected an https:// URL'),
    doc: 'relay pools to join (strelaysrv -pools), e.g. https://relays.syncthing.net/endpoint: the relay then serves anyone the pool sends; none by default, and none while a token is set',
  }),
  poolCa: str('', {
    doc: 'PEM file of extra CAs trusted for the pools (a private pool); pools are reached under the egress settings (DEVUTIL_EGRESS_RESOLVE, _PROXY, _ALLOW_CIDRS)',
  }),
};
