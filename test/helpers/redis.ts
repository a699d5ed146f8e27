// A real redis-server on a free loopback port, for the shared-limit and scale-out tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './ports.ts';

export interface RedisHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Stops and starts the same server again on the same port (fault tests). */
  restart(): Promise<void>;
  /** Sends a signal to the server (SIGSTOP freezes it with its connections open, SIGCONT thaws it). */
  signal(sig: NodeJS.Signals): void;
}

async function waitForPort(port: number, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`redis-server did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startRedis(): Promise<RedisHandle> {
  const port = await freePort();
  let proc: ChildProcess;
  const launch = async () => {
    proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    await waitForPort(port);
  };
  const stop = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    restart: async () => {
      await stop();
      await launch();
    },
    signal: (sig) => {
      proc.kill(sig);
    },
  };
}
