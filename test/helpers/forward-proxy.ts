// Real forward proxies for the outbound-proxy tests, as child processes on a free loopback port:
// tinyproxy (CONNECT, optional Basic credentials) and squid (the same, plus a url_rewrite helper
// that maps CONNECT targets onto fixture servers, so a stand-in upstream is reachable only through
// the proxy's own mapping, as an upstream behind a corporate proxy is). Both write their logs into a
// scratch directory the tests read back.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopChild } from './nginx.ts';
import { freePort } from './ports.ts';

export interface ForwardProxy {
  /** http://[user:pass@]127.0.0.1:port: what DEVUTIL_EGRESS_PROXY is set to. */
  url: string;
  port: number;
  /** The CONNECT targets asked for so far (host:port as the client sent them, before any mapping). */
  connects(): string[];
  /** The proxy's own log so far (for a failing assertion's message). */
  log(): string;
  close(): Promise<void>;
}

export interface ProxyOptions {
  /** Basic credentials the proxy requires. */
  auth?: { user: string; password: string };
}

const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');

/** Polls until `port` on loopback accepts a connection, failing after `ms`. */
async function waitListening(port: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => resolve(true));
      s.on('error', () => resolve(false));
      s.on('connect', () => s.destroy());
    });
    if (up) return;
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A scratch directory the proxy can use when it drops root for its own user (squid's `proxy`,
 * tinyproxy keeps the caller's): readable and writable by everyone, like /tmp.
 */
function scratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o777);
  return dir;
}

async function started(
  name: string,
  proc: ChildProcess,
  dir: string,
  port: number,
  log: () => string,
): Promise<() => Promise<void>> {
  let stderr = '';
  proc.stderr?.on('data', (c) => {
    stderr += c;
  });
  const close = () => stopChild(proc, dir);
  try {
    await waitListening(port, 30_000);
  } catch (err) {
    const text = `${stderr}\n${log()}`;
    await close();
    throw new Error(`${name} did not start: ${(err as Error).message}\n${text}`);
  }
  return close;
}

/** tinyproxy with every CONNECT port allowed, logging each request at the Connect level. */
export async function startTinyproxy(o: ProxyOptions = {}): Promise<ForwardProxy> {
  const port = await freePort();
  const dir = scratch('devutil-tinyproxy-');
  const logFile = join(dir, 'tinyproxy.log');
  writeFileSync(
    join(dir, 'tinyproxy.conf'),
    [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Timeout 60',
      `LogFile "${logFile}"`,
      'LogLevel Connect',
      'MaxClients 100',
      'Allow 127.0.0.1',
      'DisableViaHeader Yes',
      ...(o.auth ? [`BasicAuth ${o.auth.user} ${o.auth.password}`] : []),
      '',
    ].join('\n'),
  );
  const proc = spawn('tinyproxy', ['-d', '-c', join(dir, 'tinyproxy.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const log = () => read(logFile);
  const close = await started('tinyproxy', proc, dir, port, log);
  return {
    url: `http://${o.auth ? `${o.auth.user}:${o.auth.password}@` : ''}127.0.0.1:${port}`,
    port,
    connects: () =>
      [...log().matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g)].map((m) => m[1]!),
    log,
    close,
  };
}

/**
 * squid with no cache, and a url_rewrite helper that sends each CONNECT target in `map`
 * (`192.0.2.10:443` -> `127.0.0.1:40123`) to the fixture; other targets go where they say.
 */
export async function startSquid(
  o: ProxyOptions & { map?: Record<string, string> } = {},
): Promise<ForwardProxy> {
  const port = await freePort();
  const dir = scratch('devutil-squid-');
  const asked = join(dir, 'asked.log');
  const cases = Object.entries(o.map ?? {})
    .map(([from, to]) => `    '${from}') echo "OK rewrite-url=${to}" ;;`)
    .join('\n');
  // One line in per request (URL first; for CONNECT it is host:port), one verdict out, unbuffered.
  writeFileSync(
    join(dir, 'rewrite.sh'),
    `#!/bin/sh\nwhile read -r url rest; do\n  printf '%s\\n' "$url" >>'${asked}'\n  case $url in\n${cases}\n    *) echo ERR ;;\n  esac\ndone\n`,
  );
  chmodSync(join(dir, 'rewrite.sh'), 0o755);
  const auth: string[] = [];
  if (o.auth) {
    const hash = spawnSync('openssl', ['passwd', '-apr1', o.auth.password], { encoding: 'utf8' });
    if (hash.status !== 0) throw new Error(`openssl passwd failed: ${hash.stderr}`);
    writeFileSync(join(dir, 'passwd'), `${o.auth.user}:${hash.stdout.trim()}\n`);
    chmodSync(join(dir, 'passwd'), 0o644);
    auth.push(
      `auth_param basic program /usr/lib/squid/basic_ncsa_auth ${join(dir, 'passwd')}`,
      'acl users proxy_auth REQUIRED',
      'http_access allow users',
    );
  } else auth.push('http_access allow localhost');
  writeFileSync(
    join(dir, 'squid.conf'),
    [
      `http_port 127.0.0.1:${port}`,
      `pid_filename ${join(dir, 'squid.pid')}`,
      `cache_log ${join(dir, 'cache.log')}`,
      `access_log stdio:${join(dir, 'access.log')}`,
      `coredump_dir ${dir}`,
      'cache deny all',
      'cache_mem 8 MB',
      'pinger_enable off',
      'shutdown_lifetime 0 seconds',
      `url_rewrite_program ${join(dir, 'rewrite.sh')}`,
      'url_rewrite_children 2 startup=1 idle=1',
      ...auth,
      'http_access deny all',
      '',
    ].join('\n'),
  );
  const proc = spawn('squid', ['-N', '-f', join(dir, 'squid.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log = () => `${read(join(dir, 'cache.log'))}\n${read(join(dir, 'access.log'))}`;
  const close = await started('squid', proc, dir, port, log);
  return {
    url: `http://${o.auth ? `${o.auth.user}:${o.auth.password}@` : ''}127.0.0.1:${port}`,
    port,
    connects: () => read(asked).split('\n').filter(Boolean),
    log,
    close,
  };
}
