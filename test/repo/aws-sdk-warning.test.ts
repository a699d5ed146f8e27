// docs/deployment.md tells Node 20 users with S3 about the AWS SDK's own start-up warning by the name the
// installed SDK prints and the variable that hides it, so a user who sees it can find what it means.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;

describe('docs/deployment.md on the AWS SDK warning under Node 20', { timeout: 30_000 }, () => {
  it("names the installed SDK's Node version warning and the variable that turns it off", () => {
    const require = createRequire(join(ROOT, 'package.json'));
    const core = dirname(require.resolve('@aws-sdk/core/package.json'));
    const src = readFileSync(
      join(core, 'dist-es/submodules/client/emitWarningIfUnsupportedVersion.js'),
      'utf8',
    );
    const warning = /\b(Node\w*Warning)\b/.exec(src)?.[1];
    const off = /process\.env\.(AWS_SDK_JS_\w+)/.exec(src)?.[1];
    assert.ok(warning && off, 'the SDK still warns by name and can be silenced by a variable');
    const page = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
    assert.ok(page.includes(`\`${warning}\``), `docs/deployment.md names ${warning}`);
    assert.ok(page.includes(`\`${off}=true\``), `docs/deployment.md names ${off}`);
    assert.match(page, /production should run Node 24 or 26/);
  });
});
