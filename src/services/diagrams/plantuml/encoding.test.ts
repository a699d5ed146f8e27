import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import plantumlEncoder from 'plantuml-encoder';
import {
  DecodeError,
  decode64,
  decodeDiagram,
  encode64,
  encodeDiagram,
  normalizeSource,
} from './encoding.ts';
import { formatOf } from './formats.ts';
import { encodeRequest, FrameReader, ownBody, parseReply } from './protocol.ts';

const MAX = 1024 * 1024;
const hex = (s: string) => `~h${Buffer.from(s, 'utf8').toString('hex')}`;

describe('PlantUML text encoding', { timeout: 60_000 }, () => {
  it('encodes "Bob -> Alice : hello" exactly like the server', () => {
    assert.equal(encodeDiagram('Bob -> Alice : hello'), 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000');
    // The server drops the @startuml/@enduml lines before compressing.
    assert.equal(
      encodeDiagram('@startuml\nBob -> Alice : hello\n@enduml\n'),
      'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000',
    );
  });

  const texts = [
    '@startuml\nBob -> Alice : hello\n@enduml',
    '@startuml\nAlice -> Bob : Grüße, 你好, привет ✓\n@enduml',
    '@startmindmap\n* root\n** a\n** b\n@endmindmap',
    `@startuml\n${'class C {\n}\n'.repeat(200)}@enduml`,
  ];
  for (const text of texts) {
    it(`decodes plantuml-encoder and ~h URLs of ${JSON.stringify(text.slice(9, 30))} to the same text`, () => {
      const viaNpm = decodeDiagram(plantumlEncoder.encode(text), MAX);
      const viaHex = decodeDiagram(hex(text), MAX);
      assert.equal(viaNpm, text);
      assert.equal(viaHex, text);
      assert.equal(plantumlEncoder.decode(encodeDiagram(text)), text.replace(/^@startuml\n|\n@enduml$/g, ''));
    });
  }

  it('tolerates missing padding, odd lengths, trailing junk and the ~0 prefix', () => {
    const full = 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000';
    for (const s of [full, full.slice(0, -4), full.slice(0, -3), `${full}AAAA`, `~0${full}`, ` ${full} `]) {
      assert.equal(decodeDiagram(s, MAX), 'Bob -> Alice : hello', s);
    }
  });

  it("accepts Kroki's zlib + base64url links", () => {
    const text = '@startuml\nA -> B : kroki\n@enduml';
    const kroki = deflateSync(text, { level: 9 }).toString('base64url');
    assert.equal(decodeDiagram(kroki, MAX), text);
    assert.equal(decodeDiagram(`${kroki}==`, MAX), text);
  });

  it('uses the 0-9A-Za-z-_ alphabet, not RFC 4648', () => {
    assert.equal(encode64(Buffer.from([0, 0, 0])), '0000');
    assert.equal(encode64(Buffer.from([255, 255, 255])), '____');
    assert.deepEqual(decode64('0000'), Uint8Array.from([0, 0, 0]));
    assert.equal(decode64('ab+/'), null);
  });

  const hostile: [string, string][] = [
    ['empty', ''],
    ['not base64', '!!!!'],
    ['path traversal', '../../etc/passwd'],
    ['odd hex', '~habc'],
    ['non-hex', '~hzz'],
    ['old ~1 Huffman', '~1SyfFKj2rKt3CoKnELR1Io4ZDoSa70000'],
    ['random alphabet chars', 'abcdefgh'],
    ['CRLF', 'Syf\r\nFKj2'],
  ];
  for (const [name, s] of hostile) {
    it(`refuses ${name} with a DecodeError`, () => {
      assert.throws(() => decodeDiagram(s, MAX), DecodeError);
    });
  }

  it('refuses a source that inflates past the cap (zip bomb)', () => {
    const bomb = encode64(deflateSync(Buffer.alloc(4 * MAX, 65)).subarray(2));
    assert.throws(() => decodeDiagram(bomb, MAX), DecodeError);
    assert.throws(() => decodeDiagram(hex('x'.repeat(100)), 50), DecodeError);
  });

  it('wraps bare text in @startuml/@enduml and turns CRLF into LF', () => {
    assert.equal(normalizeSource('A -> B\r\nB -> A'), '@startuml\nA -> B\nB -> A\n@enduml');
    assert.equal(normalizeSource('@startmindmap\n* x\n@endmindmap'), '@startmindmap\n* x\n@endmindmap');
  });
});

describe('format words', { timeout: 60_000 }, () => {
  it('maps the server, dark and Kroki words', () => {
    assert.equal(formatOf('img')?.engine, 'png');
    assert.equal(formatOf('txt')?.engine, 'txt');
    assert.equal(formatOf('txt', undefined, true)?.engine, 'atxt');
    assert.equal(formatOf('dsvg')?.dark, true);
    assert.equal(formatOf('svg', 'dark')?.dark, true);
    assert.equal(formatOf('dpng', 'light')?.dark, false);
    assert.equal(formatOf('dcheck'), null);
    assert.equal(formatOf('exe'), null);
  });
});

describe('worker protocol', { timeout: 60_000 }, () => {
  it('frames requests with their id and reassembles split reply frames', () => {
    const req = encodeRequest({ op: 'render', format: 'svg', index: 2, dark: true, source: 'A\tB' }, 7);
    assert.equal(req.readUInt32BE(0), req.length - 4);
    assert.equal(req.readUInt32BE(4), 7);
    assert.equal(req.subarray(8).toString(), 'render\tsvg\t2\t1\nA\tB');
    const utf8 = encodeRequest({ op: 'render', source: 'é→😀' }, 8);
    assert.equal(utf8.readUInt32BE(0), utf8.length - 4);
    assert.equal(utf8.subarray(8).toString(), 'render\tpng\t0\t0\né→😀');

    const meta = Buffer.from('status\terror\ndescription\t(Error)\nerror\t3 Syntax Error?\n');
    const body = Buffer.from('IMG');
    const frame = Buffer.alloc(12 + meta.length + body.length);
    frame.writeUInt32BE(8 + meta.length + body.length, 0);
    frame.writeUInt32BE(7, 4);
    frame.writeUInt32BE(meta.length, 8);
    meta.copy(frame, 12);
    body.copy(frame, 12 + meta.length);
    const reader = new FrameReader(1024);
    const two = Buffer.concat([frame, frame]);
    const frames = [
      ...reader.push(two.subarray(0, 5)),
      ...reader.push(two.subarray(5, 30)),
      ...reader.push(two.subarray(30)),
    ];
    assert.equal(frames.length, 2);
    const r = parseReply(frames[1]!);
    assert.equal(r.id, 7);
    assert.equal(r.status, 'error');
    assert.deepEqual(r.errors, [{ line: 3, message: 'Syntax Error?' }]);
    assert.equal(r.body.toString(), 'IMG');
  });

  it('returns each frame with the chunk that completes it, whatever the chunk size', () => {
    const frameOf = (n: number) => {
      const f = Buffer.alloc(4 + n);
      f.writeUInt32BE(n, 0);
      for (let i = 0; i < n; i++) f[4 + i] = (n + i) & 0xff;
      return f;
    };
    const sizes = [300, 0, 5, 1000, 2];
    const stream = Buffer.concat(sizes.map(frameOf));
    const ends = sizes.map((_, k) => sizes.slice(0, k + 1).reduce((a, n) => a + 4 + n, 0));
    // Split inside length prefixes too (steps 1-3), and across several frames at once.
    for (const step of [1, 2, 3, 7, 64, 301, stream.length]) {
      const reader = new FrameReader(4096);
      const got: Buffer[] = [];
      for (let at = 0; at < stream.length; at += step) {
        got.push(...reader.push(stream.subarray(at, at + step)));
        const complete = ends.filter((e) => e <= at + step).length;
        assert.equal(got.length, complete, `chunks of ${step}, after byte ${at + step}`);
      }
      assert.deepEqual(
        got.map((f) => f.length),
        sizes,
      );
      for (const [k, n] of sizes.entries())
        assert.ok(got[k]!.equals(frameOf(n).subarray(4)), `frame ${k}, chunks of ${step}`);
    }
  });

  it('refuses an oversized frame instead of buffering it', () => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(10_000);
    assert.throws(() => new FrameReader(1024).push(head));
  });

  it('keeps a reply body as it is when it fills its read, and copies one that shares a larger read', () => {
    const alone = Buffer.alloc(5000 + 60).subarray(60);
    assert.equal(ownBody(alone), alone);
    const shared = Buffer.alloc(3 * 5000).subarray(5000, 10_000);
    shared.fill(7);
    const own = ownBody(shared);
    assert.notEqual(own.buffer, shared.buffer);
    assert.ok(own.equals(shared));
  });
});
