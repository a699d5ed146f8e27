// Codec round-trips against the bytes captured from strelaysrv 1.19.2 (docs/protocols/syncthing-relay.md
// §5), and hostile frames.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodePayload, encode, FrameDecoder, type Message, Responses, response } from './messages.ts';
import { ProtocolError } from './xdr.ts';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const id = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const key = Buffer.alloc(32, 0xab);

function decodeAll(bytes: Buffer, max?: number): Message[] {
  const d = new FrameDecoder(max);
  d.push(bytes);
  const out: Message[] = [];
  for (let m = d.next(); m; m = d.next()) out.push(m);
  return out;
}

describe('relay protocol codec', () => {
  const vectors: [string, Message, string][] = [
    ['Ping', { type: 'ping' }, '9e79bc40 00000000 00000000'],
    ['Pong', { type: 'pong' }, '9e79bc40 00000001 00000000'],
    ['RelayFull', { type: 'relayFull' }, '9e79bc40 00000007 00000000'],
    ['JoinRelayRequest ""', { type: 'joinRelayRequest', token: '' }, '9e79bc40 00000002 00000004 00000000'],
    [
      'JoinRelayRequest "abc"',
      { type: 'joinRelayRequest', token: 'abc' },
      '9e79bc40 00000002 00000008 00000003 61626300',
    ],
    [
      'Response success',
      response(Responses.success),
      '9e79bc40 00000004 00000010 00000000 00000007 73756363657373 00',
    ],
    [
      'Response not found',
      response(Responses.notFound),
      '9e79bc40 00000004 00000014 00000001 00000009 6e6f7420666f756e64 000000',
    ],
    [
      'Response already connected',
      response(Responses.alreadyConnected),
      `9e79bc40 00000004 0000001c 00000002 00000011 ${Buffer.from('already connected').toString('hex')} 000000`,
    ],
    [
      'Response unexpected message',
      response(Responses.unexpectedMessage),
      `9e79bc40 00000004 0000001c 00000064 00000012 ${Buffer.from('unexpected message').toString('hex')} 0000`,
    ],
    [
      'ConnectRequest',
      { type: 'connectRequest', id },
      `9e79bc40 00000005 00000024 00000020 ${id.toString('hex')}`,
    ],
    [
      'JoinSessionRequest',
      { type: 'joinSessionRequest', key },
      `9e79bc40 00000003 00000024 00000020 ${key.toString('hex')}`,
    ],
    [
      'SessionInvitation ::ffff:127.0.0.1 as strelaysrv sends it',
      {
        type: 'sessionInvitation',
        from: id,
        key,
        address: hex('00000000 00000000 0000ffff 7f000001'),
        port: 22067,
        serverSocket: true,
      },
      `9e79bc40 00000006 00000064 00000020 ${id.toString('hex')} 00000020 ${key.toString('hex')}
       00000010 00000000 00000000 0000ffff 7f000001 00005633 00000001`,
    ],
  ];
  for (const [name, msg, bytes] of vectors) {
    it(`encodes ${name} byte for byte and decodes it back`, () => {
      assert.equal(encode(msg).toString('hex'), hex(bytes).toString('hex'));
      assert.deepEqual(decodeAll(hex(bytes)), [msg]);
    });
  }

  it('sizes invitations with 4-byte and empty addresses as 88 and 84 bytes of payload', () => {
    const base = { type: 'sessionInvitation', from: id, key, port: 1, serverSocket: false } as const;
    assert.equal(encode({ ...base, address: Buffer.from([127, 0, 0, 1]) }).readInt32BE(8), 88);
    assert.equal(encode({ ...base, address: Buffer.alloc(0) }).readInt32BE(8), 84);
  });

  it('accepts the empty JoinRelayRequest of Syncthing <= 1.19 as token ""', () => {
    assert.deepEqual(decodeAll(hex('9e79bc40 00000002 00000000')), [{ type: 'joinRelayRequest', token: '' }]);
  });

  it('reassembles frames split at every byte and keeps the bytes after them', () => {
    const all = Buffer.concat([encode({ type: 'ping' }), encode({ type: 'connectRequest', id })]);
    const d = new FrameDecoder();
    const got: Message[] = [];
    for (const b of all) {
      d.push(Buffer.from([b]));
      for (let m = d.next(); m; m = d.next()) got.push(m);
    }
    assert.deepEqual(got, [{ type: 'ping' }, { type: 'connectRequest', id }]);
    d.push(hex('deadbeef'));
    assert.equal(d.rest().toString('hex'), 'deadbeef');
  });

  it('ignores padding contents and trailing bytes like the Go decoder', () => {
    const m = decodePayload(2, hex('00000003 616263ff 01020304'));
    assert.deepEqual(m, { type: 'joinRelayRequest', token: 'abc' });
  });

  const hostile: [string, string][] = [
    ['bad magic', 'deadbeef 00000000 00000000'],
    ['bad magic in the first byte alone', '16'],
    ['negative length', '9e79bc40 00000000 ffffffff'],
    ['length over the 1024-byte cap', '9e79bc40 00000000 00000401'],
    ['huge length', '9e79bc40 00000005 7fffffff'],
    ['unknown type 8', '9e79bc40 00000008 00000000'],
    ['negative type', '9e79bc40 ffffffff 00000000'],
    ['truncated opaque length', '9e79bc40 00000005 00000002 0000'],
    ['opaque longer than its payload', '9e79bc40 00000005 00000008 00000020 00000000'],
    ['opaque over 32 bytes', `9e79bc40 00000005 00000028 00000024 ${'00'.repeat(36)}`],
    ['response without a message', '9e79bc40 00000004 00000004 00000000'],
    ['invitation without port and flag', `9e79bc40 00000006 0000000c 00000000 00000000 00000000`],
  ];
  for (const [name, bytes] of hostile) {
    it(`rejects ${name} with a ProtocolError`, () => {
      assert.throws(() => decodeAll(hex(bytes)), ProtocolError);
    });
  }

  it('honours a smaller configured frame cap', () => {
    assert.throws(() => decodeAll(encode({ type: 'connectRequest', id }), 32), /bad payload length 36/);
  });
});
