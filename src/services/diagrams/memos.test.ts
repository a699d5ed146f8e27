// The diagram memos are one server's (ctx.local): what one server decodes is not in another's memo.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { DIAGRAM_MEMOS } from './memos.ts';

const HELLO = 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000'; // "Bob -> Alice : hello"

describe('diagram memos', { timeout: 60_000 }, () => {
  it('are kept per server: two servers in one process do not share them', async () => {
    const one = await buildTestServer();
    const two = await buildTestServer();
    try {
      const r = await one.inject({ url: `/plantuml/coder/${HELLO}` });
      assert.equal(r.statusCode, 200);
      assert.match(r.body, /Bob -> Alice : hello/);
      const mine = one.ctx.local(DIAGRAM_MEMOS);
      const theirs = two.ctx.local(DIAGRAM_MEMOS);
      assert.notEqual(mine, theirs);
      assert.equal(mine.decoded.size, 1, 'the decode was remembered by the server that did it');
      assert.equal(theirs.decoded.size, 0);
      assert.equal(one.ctx.local(DIAGRAM_MEMOS), mine, 'one server asks twice, gets the same memos');
    } finally {
      await one.close();
      await two.close();
    }
  });
});
