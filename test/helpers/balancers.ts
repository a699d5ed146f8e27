// nginx and HAProxy in front of several devutil instances, each built from the shipped example
// (deploy/nginx.conf, deploy/haproxy.cfg) with only addresses replaced, so tests run what we document.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Nginx, startNginx, stopChild, waitHttp } from './nginx.ts';
import { freePort } from './ports.ts';

const DEPLOY = new URL('../../deploy/', import.meta.url).pathname;

/** The lines of deploy/nginx.conf between `# >>> devutil <name>` and `# <<< devutil <name>`. */
export function nginxBlock(name: string): string {
  const text = readFileSync(join(DEPLOY, 'nginx.conf'), 'utf8');
  const m = new RegExp(`# >>> devutil ${name}\\n([\\s\\S]*?)# <<< devutil ${name}`).exec(text);
  if (!m?.[1]) throw new Error(`deploy/nginx.conf has no devutil ${name} block`);
  return m[1];
}

/** The shipped upstream block with one server line per port; those in `down` marked `down`. */
export function shippedUpstream(ports: number[], down: number[] = []): string {
  const servers = ports.map((p) => `server 127.0.0.1:${p}${down.includes(p) ? ' down' : ''};`).join('\n    ');
  return `upstream devutil {\n    ${servers}\n${nginxBlock('upstream')}}`;
}

/** nginx with the shipped upstream settings, proxying directives and location, to `ports`. */
export function startShippedNginx(ports: number[]): Promise<Nginx> {
  return startNginx(`${nginxBlock('proxying')}\n${nginxBlock('location')}`, shippedUpstream(ports), {
    readyPath: '/healthz',
  });
}

export interface Haproxy {
  url: string;
  port: number;
  /** What HAProxy printed (its log goes to stdout). */
  output(): string;
  close(): Promise<void>;
}

/**
 * deploy/haproxy.cfg with its `bind` line on a free loopback port (no TLS), its `server` lines
 * replaced by one per port in `ports` and a global maxconn a test machine's open-files limit allows;
 * everything else as shipped.
 */
export async function startShippedHaproxy(ports: number[]): Promise<Haproxy> {
  const port = await freePort();
  const shipped = readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8');
  const servers = ports.map((p, i) => `    server devutil${i + 1} 127.0.0.1:${p} check`).join('\n');
  let placed = false;
  const conf = shipped
    .split('\n')
    .flatMap((line) => {
      if (/^\s+bind /.test(line)) return [`    bind 127.0.0.1:${port}`];
      // HAProxy refuses to start when it cannot raise the open-files limit to twice maxconn.
      if (/^\s+maxconn /.test(line)) return ['    maxconn 1000'];
      if (/^\s+server /.test(line)) {
        if (placed) return [];
        placed = true;
        return [servers];
      }
      return [line];
    })
    .join('\n');
  if (!placed) throw new Error('deploy/haproxy.cfg has no server line');
  const dir = mkdtempSync(join(tmpdir(), 'devutil-haproxy-'));
  writeFileSync(join(dir, 'haproxy.cfg'), conf);
  // -db: stay in the foreground; the log goes to stdout (`log stdout` in the shipped file).
  const proc = spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (c) => {
    out += c;
  });
  proc.stderr?.on('data', (c) => {
    out += c;
  });
  const url = `http://127.0.0.1:${port}`;
  const close = () => stopChild(proc, dir);
  try {
    await waitHttp(`${url}/healthz`, 15_000);
  } catch (err) {
    await close();
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  return { url, port, output: () => out, close };
}
