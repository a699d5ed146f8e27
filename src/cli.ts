// `devutil serve | config | --help`: flags > env > config file > defaults.
import { parseArgs } from 'node:util';
import { VERSION } from './version.ts';

const HELP = `devutil ${VERSION}: developer utilities in one server

Usage:
  devutil [serve] [options]   run the server (default command)
  devutil config [options]    print the effective configuration (secrets masked)
  devutil --help              this text; devutil config --reference lists every key

Options:
  --port N             listen port (DEVUTIL_PORT, default 8080)
  --host ADDR          listen address (DEVUTIL_HOST, default :: = IPv6 and IPv4;
                       0.0.0.0 on a machine without IPv6)
  --data-dir DIR       data directory (DEVUTIL_DATA_DIR, default ./data)
  --config FILE        JSON or YAML config file (DEVUTIL_CONFIG)
  --workers N|auto     HTTP worker processes (DEVUTIL_WORKERS, default 1)
  --log-level LEVEL    fatal|error|warn|info|debug|trace|silent (DEVUTIL_LOG_LEVEL)
                       log lines are readable on a terminal, JSON otherwise
                       (DEVUTIL_LOG_FORMAT=auto|pretty|json)
  --set SECTION.KEY=V  any other key, e.g. --set files.maxBytes=1GiB (repeatable)
  --reference          with config: list every key, its env name, default and meaning
  -h, --help           show this help
  -v, --version        print the version

Every key also has one environment variable, DEVUTIL_<SECTION>_<KEY>; see docs/configuration.md.
`;

export async function main(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`devutil: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = positionals[0] ?? 'serve';
  if (!['serve', 'config'].includes(command) || positionals.length > 1) {
    process.stderr.write(`devutil: unknown command ${JSON.stringify(positionals.join(' '))}\n\n${HELP}`);
    return 2;
  }
  // Loaded only now: --help and --version answer without loading the config schema or the server.
  const { ConfigError, configReference, describeConfig, loadConfig } = await import('./config.ts');
  if (command === 'config' && values.reference) {
    for (const r of configReference()) {
      process.stdout.write(
        `${r.env.padEnd(36)} ${`${r.section}.${r.key}`.padEnd(28)} ${r.kind.padEnd(10)} ${r.shownDefault ?? JSON.stringify(r.default)}\n    ${r.doc}${r.formerly ? ` (formerly ${r.formerly})` : ''}${r.fallbackEnv ? ` (when unset: ${r.fallbackEnv.join(', ')})` : ''}\n`,
      );
    }
    return 0;
  }

  const flags: Record<string, string> = {};
  const direct: [keyof typeof values, string][] = [
    ['port', 'server.port'],
    ['host', 'server.host'],
    ['data-dir', 'server.dataDir'],
    ['workers', 'server.workers'],
    ['log-level', 'log.level'],
  ];
  for (const [flag, key] of direct) {
    const v = values[flag];
    if (typeof v === 'string') flags[key] = v;
  }
  for (const s of values.set ?? []) {
    const eq = s.indexOf('=');
    if (eq < 1) {
      process.stderr.write(`devutil: --set expects SECTION.KEY=VALUE, got ${JSON.stringify(s)}\n`);
      return 2;
    }
    const key = s.slice(0, eq);
    flags[key.includes('.') ? key : `server.${key}`] = s.slice(eq + 1);
  }

  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig({ env, flags, ...(values.config ? { file: values.config } : {}) });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`devutil: ${err.message}\n`);
      return 78; // EX_CONFIG
    }
    throw err;
  }
  if (command === 'config') {
    process.stdout.write(`${JSON.stringify(describeConfig(loaded.config), null, 2)}\n`);
    for (const w of loaded.warnings) process.stderr.write(`warning: ${w}\n`);
    return 0;
  }
  // The worker JVMs start while the server's modules load. What loads up to here is the config
  // schema and sections and the logger (src/prelaunch.test.ts). The engine's module is imported
  // beside main.ts, so the JVM is spawned once main.ts's graph has loaded: awaiting the prelaunch
  // first spawned it 0.1-0.2 s earlier, but the JVM's start then took the cores from Node's loading
  // and the server listened later, with the first diagram no sooner (docs/diagrams.md).
  const { createLogger } = await import('./infra/observe/logger.ts');
  const { config } = loaded;
  const logger = createLogger(config.log.level, undefined, config.log.format);
  const { prelaunch } = await import('./prelaunch.ts');
  const prelaunched = prelaunch(config, logger);
  const { serve } = await import('./main.ts');
  const { activatedSocket } = await import('./activation.ts');
  const { default: cluster } = await import('node:cluster');
  // A socket systemd passed (deploy/devutil.socket) replaces the port: restarts then lose nothing.
  const socket = activatedSocket(env, { pid: process.pid, ppid: process.ppid, worker: cluster.isWorker });
  return serve(config, loaded.warnings, { logger, prelaunched, socket });
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      config: { type: 'string' },
      workers: { type: 'string' },
      'log-level': { type: 'string' },
      set: { type: 'string', multiple: true },
      reference: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
}
