// setup.sh with hostile operator values, as if the config's own check (no quotes, spaces or shell
// metacharacters in a public URL) were not there: piped into dash and into bash as users run it,
// in a scratch HOME. Values that would run commands if a shell read them unquoted, or broke out of
// their quotes, are written quoted, so ~/.profile sources in dash and bash (and as their login
// profile) without running anything and gives back the value as it was. Values no URL has (a
// newline, a tab, a double quote, a backslash, a space) stop the script before anything changes.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { renderScript, type ScriptValues } from '../../src/services/setup/script.ts';
import { type RunResult, run } from '../fixtures/proxy/run.ts';
import { tempDir } from '../helpers/server.ts';
import { hasTool, missing } from '../helpers/tools.ts';

const SHELLS = ['dash', 'bash'] as const;
const absent = [...SHELLS, 'curl'].filter((t) => !hasTool(t, t === 'dash' ? ['-c', ':'] : undefined));
const skip = absent.length ? missing(`${absent.join(', ')} not installed`) : false;

// Each would create a file in $HOME if any shell ran it: closing the single quotes, command
// substitution both ways, a second command, a pipe (${IFS} stands for the space a URL never has).
const RUN = (tag: string) =>
  `';touch\${IFS}$HOME/pwned-${tag}-quote;'$(touch\${IFS}$HOME/pwned-${tag}-subst)\`touch\${IFS}$HOME/pwned-${tag}-tick\`;touch\${IFS}$HOME/pwned-${tag}-semi|touch\${IFS}$HOME/pwned-${tag}-pipe&`;

const PROFILE = '# ~/.profile\nexport PATH="$HOME/bin:$PATH"\n';
const NPMRC = 'fund=false\n';

/** Runs `cmd` with exactly this environment. */
const exec = (cmd: string, args: string[], env: Record<string, string>): Promise<RunResult> =>
  run(cmd, args, { env, exactEnv: true, timeoutMs: 60_000 });

describe('setup.sh with hostile operator values', { skip, timeout: 120_000 }, () => {
  let server: Server;
  let url = '';
  let script = '';
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/setup.sh') res.writeHead(200, { 'content-type': 'text/plain' }).end(script);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server?.close());

  /** The script this instance would serve with these values (the reachability check passes). */
  function serve(v: Partial<ScriptValues['tools']>, base = `${url}/${RUN('base')}`): void {
    script = renderScript({
      base,
      checks: [`${url}/setup.sh`],
      private: false,
      tools: v,
      pipTrustedHost: '',
      apt: [],
      dockerInsecure: '',
      probes: {},
    });
  }

  function home(): { env: Record<string, string>; dir: string } {
    const dir = tempDir('devutil-setup-hostile-');
    writeFileSync(join(dir, '.profile'), PROFILE);
    writeFileSync(join(dir, '.npmrc'), NPMRC);
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dir, LANG: 'C' };
    return { env, dir };
  }

  const pwned = (dir: string) => readdirSync(dir).filter((f) => f.startsWith('pwned'));
  /** What a user types, with `shell` as their sh. */
  const setup = (shell: string, env: Record<string, string>, args: string[]) =>
    exec(shell, ['-c', `curl -fsSL "$0/setup.sh" | ${shell} -s -- "$@"`, url, ...args], env);

  for (const shell of SHELLS)
    it(`${shell}: writes every value quoted, and ~/.profile sources in dash and bash running nothing`, async () => {
      const hf = `${url}/proxy/hf/${RUN('hf')}`;
      const npm = `${url}/proxy/npm/${RUN('npm')}`;
      const pip = `${url}/proxy/pypi.org/simple/${RUN('pip')}`;
      serve({ hf, npm, pip, relay: `relay://127.0.0.1:22067/?id=${RUN('relay')}` });
      const { env, dir } = home();
      const r = await setup(shell, env, ['hf', 'npm', 'pip', 'relay']);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.deepEqual(pwned(dir), [], 'running the script ran nothing');
      for (const [reader, args] of [
        ['dash', ['-c', '. "$HOME/.profile"; printf %s "$HF_ENDPOINT"']],
        ['bash', ['-c', '. "$HOME/.profile"; printf %s "$HF_ENDPOINT"']],
        ['bash', ['-l', '-c', 'printf %s "$HF_ENDPOINT"']],
        ['dash', ['-l', '-c', 'printf %s "$HF_ENDPOINT"']],
      ] as const) {
        const s = await exec(reader, [...args], env);
        assert.equal(s.code, 0, `${reader} ${args.join(' ')}: ${s.stderr}`);
        assert.equal(s.stdout, hf, `${reader} ${args[0]}: the value as it was`);
        assert.equal(s.stderr, '');
      }
      assert.deepEqual(pwned(dir), [], 'sourcing the profile ran nothing');
      // The line it printed for this shell is one a shell can paste as it is.
      const line = /^hf: for this shell: (export HF_ENDPOINT=.*)$/m.exec(r.stdout)?.[1];
      assert.ok(line, r.stdout);
      const pasted = await exec(shell, ['-c', `${line}; printf %s "$HF_ENDPOINT"`], env);
      assert.equal(pasted.stdout, hf);
      assert.deepEqual(pwned(dir), [], 'pasting its line ran nothing');
      // Files no shell reads get the value as written.
      assert.equal(readFileSync(join(dir, '.npmrc'), 'utf8'), `${NPMRC}registry=${npm}\n`);
      assert.match(
        readFileSync(join(dir, '.config/pip/pip.conf'), 'utf8'),
        new RegExp(`^index-url = ${pip.replace(/[^\w]/g, '\\$&')}$`, 'm'),
      );
      const undo = await setup(shell, env, ['--undo']);
      assert.equal(undo.code, 0, undo.stderr);
      assert.equal(readFileSync(join(dir, '.profile'), 'utf8'), PROFILE);
      assert.deepEqual(pwned(dir), []);
    });

  const refused: [string, string][] = [
    ['a newline', '\nexport EVIL=1'],
    ['a carriage return', '\rexport EVIL=1'],
    ['a tab', '\tx'],
    ['a double quote', '"x'],
    ['a backslash', '\\x'],
    ['a space', ' x'],
  ];
  for (const shell of SHELLS)
    for (const [what, tail] of refused)
      it(`${shell}: stops before changing anything when a value has ${what}`, async () => {
        serve({ hf: `${url}/proxy/hf${tail}`, npm: `${url}/proxy/npm/` });
        const { env, dir } = home();
        const r = await setup(shell, env, ['npm', 'hf']);
        assert.equal(r.code, 1, r.stdout);
        assert.match(
          r.stderr,
          /HF_URL of .* (has characters a URL never has|has a space).*nothing was changed/,
        );
        assert.equal(readFileSync(join(dir, '.profile'), 'utf8'), PROFILE);
        assert.equal(readFileSync(join(dir, '.npmrc'), 'utf8'), NPMRC);
        assert.deepEqual(readdirSync(dir).sort(), ['.npmrc', '.profile']);
      });
});
