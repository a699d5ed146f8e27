// Syncthing relay section (its own TLS listener, not part of the HTTP server). Limits keep
// strelaysrv's names and defaults (digest §13); durations accept Go style ("1m0s", "90s", "500ms")
// or plain seconds.
import { bool, bytes, type Field, int, type Parsed, str } from '../infra/schema.ts';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go-style duration into milliseconds; a bare number means seconds. */
export function parseDuration(raw: unknown): number | null {
  if (typeof raw === 'number') return Number.isFinite(raw) && raw >= 0 ? Math.round(raw * 1000) : null;
  if (typeof raw !== 'string') return null;
  const s = raw.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(s)) return null;
  let ms = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? 0);
  return Math.round(ms);
}

function duration(defMs: number, o: { doc: string; minMs?: number }): Field<number> {
  const min = o.minMs ?? 0;
  return {
    kind: 'duration',
    default: defMs,
    doc: `${o.doc} (e.g. 1m0s, 90s, 500ms)`,
    parse(raw): Parsed<number> {
      const ms = parseDuration(raw);
      if (ms === null)
        return { ok: false, error: `expected a duration like 1m0s, 90s or 500ms, got ${String(raw)}` };
      if (ms < min) return { ok: false, error: `must be at least ${min}ms` };
      return { ok: true, value: ms };
    },
  };
}

export const relaySection = {
  enabled: bool(true, { doc: 'run the Syncthing relay (protocol v1) listener' }),
  port: int(22067, { min: 0, max: 65535, doc: 'relay listen port' }),
  statusPort: int(22070, { min: 0, max: 65535, doc: 'strelaysrv-style /status HTTP port (0 = off)' }),
  host: str('', { doc: 'listen address for the relay and status ports (empty = all interfaces)' }),
  extAddress: str('', {
    doc: 'host[:port] advertised in the relay URI (empty = host of the public URL and the listen port)',
  }),
  messageTimeout: duration(60_000, {
    minMs: 100,
    doc: 'TLS handshake, first session-mode message and session pairing deadline',
  }),
  networkTimeout: duration(120_000, {
    minMs: 100,
    doc: 'protocol-mode silence limit; a paired session with no bytes either way for this long is closed',
  }),
  pingInterval: duration(60_000, { minMs: 100, doc: 'Ping to joined clients; deadline to join' }),
  perSessionRate: bytes(0, { doc: 'bytes/s per session, both directions together (0 = unlimited)' }),
  globalRate: bytes(0, { doc: 'bytes/s for the whole relay (0 = unlimited)' }),
  maxSessions: int(10_000, { min: 1, doc: 'sessions (pending or active) at once; more get RelayFull' }),
  maxConnections: int(16_000, {
    min: 1,
    doc: 'protocol connections plus active pipe directions; over it joins get RelayFull',
  }),
  maxMessageBytes: int(1024, { min: 64, max: 65_536, doc: 'frame payload cap (strelaysrv: 1024)' }),
  token: str('', { secret: true, doc: 'if set, joining requires this token (relay URI &token=)' }),
  providedBy: str('', { doc: 'free text shown in /status (strelaysrv -provided-by)' }),
};
