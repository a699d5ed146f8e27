// curl as the client: the last response's status and headers (repeated ones kept apart) and the
// body, written to a file so binary bytes arrive untouched.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from './server.ts';

const run = promisify(execFile);

export interface CurlResult {
  status: number;
  headers: Record<string, string[]>;
  body: Buffer;
  /** One header, repeated values joined with ", "; undefined when absent. */
  header(name: string): string | undefined;
}

/** Runs `curl -sS <args> <url>`; with -L the status and headers are those of the last hop. */
export async function curl(url: string, args: string[] = []): Promise<CurlResult> {
  const dir = tempDir();
  const out = join(dir, 'body');
  const hdr = join(dir, 'headers');
  await run('curl', ['-sS', '-o', out, '-D', hdr, ...args, url]);
  const blocks = readFileSync(hdr, 'latin1')
    .trim()
    .split(/\r\n\r\n/);
  const lines = (blocks.at(-1) ?? '').split('\r\n');
  const headers: Record<string, string[]> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    const k = l.slice(0, i).toLowerCase();
    headers[k] = [...(headers[k] ?? []), l.slice(i + 1).trim()];
  }
  let body = Buffer.alloc(0);
  try {
    body = readFileSync(out);
  } catch {
    // no body (HEAD, 304)
  }
  return {
    status: Number(lines[0]?.split(' ')[1]),
    headers,
    body,
    header: (name) => headers[name.toLowerCase()]?.join(', '),
  };
}
