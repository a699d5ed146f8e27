// System tools a test needs (redis-server, git, java, syncthing, chromium...). Under CI=true a
// missing tool is a failure; elsewhere the test is skipped with a loud notice.
import { spawnSync } from 'node:child_process';

const cache = new Map<string, boolean>();

export function hasTool(cmd: string, versionArgs: string[] = ['--version']): boolean {
  const key = `${cmd} ${versionArgs.join(' ')}`;
  let ok = cache.get(key);
  if (ok === undefined) {
    // Generous: a shim (pyenv's python3 is a shell script) took over 15 s at load 35.
    const r = spawnSync(cmd, versionArgs, { stdio: 'ignore', timeout: 90_000 });
    ok = r.error === undefined && r.status === 0;
    cache.set(key, ok);
  }
  return ok;
}

/**
 * For `describe(name, { skip: toolSkip('redis-server') }, ...)`: false when the tool is there,
 * a reason string to skip when it is not (outside CI), and a thrown error under CI=true.
 */
export function toolSkip(cmd: string, versionArgs?: string[]): false | string {
  return hasTool(cmd, versionArgs) ? false : missing(`${cmd} is not installed`);
}

/**
 * The same rule for any other missing prerequisite (a JDK layout, a kernel feature): the reason
 * to skip outside CI, a thrown error under CI=true. Every conditional skip goes through here.
 */
export function missing(reason: string): string {
  if (process.env['CI'] === 'true') throw new Error(`${reason}: it is required when CI=true (see .ci/run)`);
  process.stderr.write(
    `\n!!! SKIPPING tests: ${reason} (install it, or run with CI=true to make this fatal) !!!\n\n`,
  );
  return reason;
}

/**
 * For `describe(name, { skip: onlyOnNode(26, why) }, ...)`: a slow test whose subject does not depend
 * on the host's Node version (a container image that carries its own Node, a fleet test whose
 * behaviour the other runtime's suite already covers in parts) runs in one runtime leg of CI only.
 * The other leg says so loudly; this is never a failure, under CI=true or not.
 */
export function onlyOnNode(major: number, why: string): false | string {
  const here = Number(process.versions.node.split('.')[0]);
  if (here === major) return false;
  const reason = `runs on Node ${major} only (${why}); this is Node ${process.versions.node}`;
  process.stderr.write(`\n!!! SKIPPING tests: ${reason} !!!\n\n`);
  return reason;
}
