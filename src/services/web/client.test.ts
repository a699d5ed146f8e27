// The page script's pure logic, run in Node: PlantUML encoding, MD5, the proxy URL converter.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { deflateRawSync, inflateRawSync, inflateSync } from 'node:zlib';
import { ECOSYSTEM_NAMES, packagesCaption } from '../../../web/src/admin.ts';
import { editorLine } from '../../../web/src/diagram.ts';
import { emailHashes, md5Hex } from '../../../web/src/md5.ts';
import { convert, hostAllowed } from '../../../web/src/proxy-convert.ts';
import { decodeDiagram, decodeKroki, encodeKrokiDiagram } from '../diagrams/plantuml/encoding.ts';
import { decode64, encode64, encodeKroki, encodePlantUml } from '../diagrams/text-encoder.ts';
// The proxy's real default allow-list: the page receives exactly this in data-allow.
import { DEFAULT_ALLOW } from '../proxy/config.ts';
import { ECOSYSTEMS } from '../proxy/ecosystems/index.ts';

const decodeText = (enc: string) => inflateRawSync(decode64(enc) ?? new Uint8Array()).toString('utf8');

describe('PlantUML encoding in the page', () => {
  it('matches the example of docs/protocols/plantuml-server.md §3', () => {
    const enc = encode64(deflateRawSync(Buffer.from('Bob -> Alice : hello'), { level: 9 }));
    assert.equal(enc, 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000');
  });

  it("encodes with CompressionStream to text the server's decoder reads back, Unicode included", async () => {
    for (const text of ['@startuml\nA -> B : hi\n@enduml', 'Alice -> Bob : 你好 ✓', 'x'.repeat(5000)]) {
      const enc = await encodePlantUml(`  ${text}\n`);
      assert.match(enc, /^[0-9A-Za-z_-]+$/);
      assert.equal(decodeText(enc), text);
      assert.equal(decodeDiagram(enc, 1024 * 1024), text);
    }
  });

  it("encodes Kroki links (zlib, base64url, no padding) that the server's Kroki decoder reads back", async () => {
    for (const text of ['digraph { a -> b }', 'graph LR\n  A[你好] --> B[✓]', 'x'.repeat(5000), 'a']) {
      const enc = await encodeKroki(text);
      assert.match(enc, /^[A-Za-z0-9_-]+$/, 'URL-safe, unpadded');
      assert.equal(inflateSync(Buffer.from(enc, 'base64url')).toString('utf8'), text, 'zlib with its header');
      assert.equal(decodeKroki(enc, 1024 * 1024), text);
      // The server's encoder (the page's first link) encodes the same text: both decode alike.
      assert.equal(decodeKroki(encodeKrokiDiagram(text), 1024 * 1024), text);
    }
  });

  it('round-trips every byte value and every tail length through the alphabet', () => {
    for (const n of [0, 1, 2, 3, 256]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => 255 - i);
      const enc = encode64(bytes);
      assert.equal(enc.length, Math.ceil(n / 3) * 4);
      assert.deepEqual(decode64(enc)?.subarray(0, n), bytes);
    }
    // A length that is not a multiple of 4 reads as if padded with '0' (value 0).
    assert.deepEqual(decode64('__'), Uint8Array.from([255, 240, 0]));
    assert.equal(decode64('ab=c'), null);
    assert.equal(decode64('abé0'), null);
  });
});

describe('email hashing in the page', () => {
  it('computes MD5 like node:crypto for lengths around the block edges', () => {
    for (const n of [0, 1, 55, 56, 63, 64, 65, 200]) {
      const b = Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 0xff);
      assert.equal(md5Hex(b), createHash('md5').update(b).digest('hex'), `length ${n}`);
    }
  });

  it('hashes the trimmed, lower-cased email as other sites do (MD5), and with SHA-256 too', async () => {
    const { md5, sha256 } = await emailHashes('  Me@Example.COM ');
    assert.equal(md5, createHash('md5').update('me@example.com').digest('hex'));
    assert.equal(sha256, createHash('sha256').update('me@example.com').digest('hex'));
  });
});

describe('diagram editor error line', () => {
  // The engine's own error image says "line 3" for the third line below, while the header is
  // 0-based from the @startuml line (plantuml-server's convention).
  it('reports the line the engine and the editor both call line N', () => {
    assert.equal(editorLine('@startuml\nAlice -> Bob : hi\nthis is not valid ((\n@enduml', 2), 3);
    assert.equal(editorLine('@startuml\r\nfoo bar baz\r\n@enduml', 1), 2);
  });
  it('counts blank lines before @startuml, and text the server wraps in @startuml itself', () => {
    assert.equal(editorLine('\n\n@startuml\nAlice -> Bob : hi\nthis is not valid ((\n@enduml', 2), 5);
    assert.equal(editorLine('Alice -> Bob : hi\nthis is not valid ((', 2), 2);
  });
});

describe('proxy URL converter', () => {
  const P = 'https://proxy.example.net';
  const cases: [string, string, RegExp][] = [
    [
      'https://github.com/nodejs/node',
      `${P}/github.com/nodejs/node`,
      /^git clone https:\/\/proxy\.example\.net\/github\.com\/nodejs\/node\.git$/,
    ],
    [
      'github.com/nodejs/node.git',
      `${P}/github.com/nodejs/node.git`,
      /^git clone .*\/github\.com\/nodejs\/node\.git$/,
    ],
    ['git@github.com:torvalds/linux.git', `${P}/github.com/torvalds/linux.git`, /^git clone /],
    [
      'https://github.com/o/r/releases/download/v1/tool.tar.gz',
      `${P}/github.com/o/r/releases/download/v1/tool.tar.gz`,
      /^curl -fL -o "tool\.tar\.gz" https:\/\/proxy/,
    ],
    [
      'https://deb.debian.org/debian',
      `${P}/deb.debian.org/debian`,
      /^deb https:\/\/proxy\.example\.net\/deb\.debian\.org\/debian bookworm main$/,
    ],
    [
      'deb [arch=amd64] http://deb.debian.org/debian bookworm main contrib',
      `${P}/deb.debian.org/debian`,
      /^deb \[arch=amd64\] https:\/\/proxy\.example\.net\/deb\.debian\.org\/debian bookworm main contrib$/,
    ],
    [
      'https://pypi.org/simple/requests/',
      `${P}/pypi.org/simple/requests/`,
      /^pip install --index-url https:\/\/proxy\.example\.net\/pypi\.org\/simple requests$/,
    ],
    ['https://pypi.org/project/flask/', `${P}/pypi.org/project/flask/`, /--index-url .* flask$/],
    [
      'https://raw.githubusercontent.com/o/r/main/install.sh?x=1#frag',
      `${P}/raw.githubusercontent.com/o/r/main/install.sh?x=1`,
      /^curl -fL -o "install\.sh" /,
    ],
  ];
  for (const [input, url, snippet] of cases) {
    it(`converts ${input}`, () => {
      const r = convert(input, `${P}/`, DEFAULT_ALLOW);
      assert.ok(r.ok, r.ok ? '' : r.error);
      assert.equal(r.value.url, url);
      assert.match(r.value.snippet, snippet);
    });
  }

  const refused: [string, RegExp][] = [
    ['https://evil.com/x', /not on this proxy's allow-list/],
    ['https://github.com.evil.com/x', /allow-list/],
    ['https://github.com:8443/x', /port/],
    ['https://user:tok@github.com/o/r', /credentials/],
    ['ftp://deb.debian.org/debian', /http\(s\) URL/],
    ['javascript:alert(1)', /http\(s\) URL|allow-list/],
    ['https://127.0.0.1/x', /allow-list/],
  ];
  for (const [input, why] of refused) {
    it(`refuses ${input}`, () => {
      const r = convert(input, P, DEFAULT_ALLOW);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, why);
    });
  }

  it('matches *.domain on whole labels only', () => {
    assert.equal(hostAllowed('api.github.com', ['*.github.com']), true);
    assert.equal(hostAllowed('evilgithub.com', ['*.github.com']), false);
    assert.equal(hostAllowed('github.com', ['*.github.com']), false);
  });
});

describe('admin dashboard packages caption', () => {
  it('names the ecosystems of the rows it shows, npm, Go and Hugging Face as well as PyPI and Debian', () => {
    const rows = [
      { key: 'npm/devutil-dep' },
      { key: 'pypi/requests' },
      { key: 'go/github.com/DevUtil/hello' },
      { key: 'npm/left-pad' },
      { key: 'hf/org/model' },
    ];
    assert.equal(packagesCaption(rows), 'Packages (npm, PyPI, Go, Hugging Face)');
    assert.equal(packagesCaption([{ key: 'debian/devutil-hello' }]), 'Packages (Debian)');
    assert.equal(packagesCaption([]), 'Packages');
  });

  it('has a human name for every ecosystem profile the proxy serves', () => {
    for (const e of ECOSYSTEMS) assert.ok(ECOSYSTEM_NAMES[e.name], `${e.name} is shown by a name`);
  });
});
