// Free loopback ports, on a machine where a NAT rule sends a loopback port elsewhere: what a
// container runtime leaves behind when a container's network teardown never ran (podman's published
// ports). Such a port binds, and no client reaches a server on it (a redis-sentinel and an admin-oidc
// node of CI runs got "connection refused" on one), so freePort must not hand it out.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { describe, it } from 'node:test';
import { freePort, probe } from './ports.ts';
import { missing, toolSkip } from './tools.ts';

const nat = (): false | string =>
  process.getuid?.() === 0
    ? toolSkip('iptables', ['-V'])
    : missing('the NAT rule case needs root (iptables)');

/** Whether a client reaches a server listening on `port` (the symptom the tests met). */
function reached(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const srv = createServer((s) => s.destroy());
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const c = connect(port, '127.0.0.1');
      const end = (ok: boolean) => {
        c.destroy();
        srv.close(() => resolve(ok));
      };
      srv.once('connection', () => end(true));
      c.once('error', () => end(false));
    });
  });
}

describe('free loopback ports', { timeout: 60_000 }, () => {
  it('hands out ports below the ephemeral range that a server takes and a client reaches', async () => {
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      assert.ok(port >= 23_000, String(port));
      assert.equal(await reached(port), true, String(port));
    }
  });

  it('passes over a port that a NAT rule sends to a closed one', { skip: nat() }, async () => {
    const port = await freePort();
    const closed = await freePort();
    const rule = ['OUTPUT', '-d', '127.0.0.1/32', '-p', 'tcp', '--dport', String(port), '-j', 'DNAT'];
    const to = ['--to-destination', `127.0.0.1:${closed}`];
    execFileSync('iptables', ['-t', 'nat', '-A', ...rule, ...to]);
    try {
      assert.equal(await reached(port), false, 'the rule makes the port unreachable');
      assert.equal(await probe(port), null, 'so the probe refuses it');
      assert.equal(await probe(closed), closed, 'and takes the port the rule points at');
    } finally {
      execFileSync('iptables', ['-t', 'nat', '-D', ...rule, ...to]);
    }
  });
});
