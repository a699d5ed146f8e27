// Which passed socket is the HTTP one (sd_listen_fds(3) rules): only for the process LISTEN_PID
// names (a cluster worker: its primary), the descriptor named "http" when there are several.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { activatedSocket } from './activation.ts';

const single = { pid: 100, ppid: 1, worker: false };

describe('socket activation', () => {
  it('takes fd 3 when systemd passed one socket to this process', () => {
    assert.deepEqual(activatedSocket({ LISTEN_FDS: '1', LISTEN_PID: '100' }, single), { fd: 3, name: null });
    assert.deepEqual(
      activatedSocket({ LISTEN_FDS: '1', LISTEN_PID: '100', LISTEN_FDNAMES: 'http' }, single),
      {
        fd: 3,
        name: 'http',
      },
    );
  });

  it('takes the one named http among several, else the first', () => {
    const env = { LISTEN_FDS: '3', LISTEN_PID: '100', LISTEN_FDNAMES: 'relay:metrics:http' };
    assert.deepEqual(activatedSocket(env, single), { fd: 5, name: 'http' });
    assert.deepEqual(activatedSocket({ ...env, LISTEN_FDNAMES: 'a:b:c' }, single), { fd: 3, name: 'a' });
  });

  it('ignores what was passed to another process, or nothing at all', () => {
    for (const env of [
      {},
      { LISTEN_FDS: '1' },
      { LISTEN_FDS: '1', LISTEN_PID: '101' },
      { LISTEN_FDS: '0', LISTEN_PID: '100' },
      { LISTEN_FDS: 'x', LISTEN_PID: '100' },
      { LISTEN_FDS: '-1', LISTEN_PID: '100' },
    ])
      assert.equal(activatedSocket(env, single), null, JSON.stringify(env));
  });

  it('lets a cluster worker use the socket passed to its primary (the primary listens on it)', () => {
    const env = { LISTEN_FDS: '1', LISTEN_PID: '1' };
    assert.deepEqual(activatedSocket(env, { pid: 200, ppid: 1, worker: true }), { fd: 3, name: null });
    assert.equal(activatedSocket(env, { pid: 1, ppid: 0, worker: true }), null);
  });
});
