// The relay's settings from config and its URI: what the home page, the status route and the
// listener read, without loading the relay itself (relay.ts, loaded by the background listener).
import { isIP } from 'node:net';
import type { Config } from '../../config.ts';

export interface RelaySettings {
  host: string;
  port: number;
  /** 0 = no status server. */
  statusPort: number;
  /** Host (and optional port) advertised in the URI; invitations carry it only when it is an IP. */
  publicHost: string;
  publicPort: number;
  messageTimeoutMs: number;
  networkTimeoutMs: number;
  pingIntervalMs: number;
  perSessionRate: number;
  globalRate: number;
  maxSessions: number;
  maxConnections: number;
  maxMessageBytes: number;
  /** Read buffer per session direction (default PUMP_BUFFER_BYTES). */
  networkBufferBytes?: number;
  token: string;
  providedBy: string;
  version: string;
  /** Relay pools joined (pool.ts), shown in /status as strelaysrv shows them. */
  pools?: readonly string[];
}

/** relay://<host>:<port>/?id=<DEVICE_ID> (IPv6 hosts bracketed). */
export function relayUri(host: string, port: number, deviceId: string): string {
  return `relay://${isIP(host) === 6 ? `[${host}]` : host}:${port}/?id=${deviceId}`;
}

/** Splits "host", "host:port", "[v6]:port" or "[v6]". */
export function splitHostPort(s: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(s) ?? /^([^:]*)(?::(\d+))?$/.exec(s);
  if (!m) return { host: s, port: 0 };
  return { host: m[1] ?? '', port: m[2] ? Number(m[2]) : 0 };
}

export function relaySettings(config: Config, baseUrl: string, version: string): RelaySettings {
  const c = config.relay;
  const ext = splitHostPort(c.extAddress);
  const publicHost = ext.host || new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
  return {
    host: c.host,
    port: c.port,
    statusPort: c.statusPort,
    publicHost,
    publicPort: ext.port,
    messageTimeoutMs: c.messageTimeout,
    networkTimeoutMs: c.networkTimeout,
    pingIntervalMs: c.pingInterval,
    perSessionRate: c.perSessionRate,
    globalRate: c.globalRate,
    maxSessions: c.maxSessions,
    maxConnections: c.maxConnections,
    maxMessageBytes: c.maxMessageBytes,
    networkBufferBytes: c.networkBuffer,
    token: c.token,
    providedBy: c.providedBy,
    version,
    // strelaysrv joins no pool while a token makes the relay private; neither does this one.
    pools: c.token ? [] : c.pools,
  };
}
