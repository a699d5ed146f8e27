// Kroki's own sample diagrams (test/fixtures/kroki-samples, each with its origin in ORIGIN.md and
// index.json) through devutil's Kroki API in Kroki's three request shapes: GET with the deflated
// source in the path, POST of the text, POST / of JSON. Each answers 200 with well-formed SVG (root
// <svg>) showing the sample's labels, or PNG where devutil offers only PNG (ditaa). Then C4-PlantUML
// includes in every form people paste, served offline from PlantUML's bundled C4 library.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { missing } from '../../../../test/helpers/tools.ts';
import { xmlProblem } from '../../../../test/helpers/xml.ts';
import { findChromium } from '../engines/find-chromium.ts';
import { BROWSERLESS, mermaidType } from '../engines/mermaid.ts';
import { type Language, languageOf, NOT_SERVED } from './languages.ts';

const DIR = new URL('../../../../test/fixtures/kroki-samples/', import.meta.url);
interface Sample {
  file: string;
  type: string;
  labels: string[];
  repo: string;
  commit: string;
  path: string;
}
const SAMPLES = JSON.parse(readFileSync(new URL('index.json', DIR), 'utf8')) as Sample[];
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
const kroki = (s: string) => deflateSync(s, { level: 9 }).toString('base64url');
/**
 * The words of an SVG's text, lower case: character references decoded, tags and any whitespace
 * (PlantUML's C4 sets each word and space apart, Pikchr writes no-break spaces) as one space.
 */
const wordsOf = (svg: string) =>
  ` ${svg
    .replace(/<[^>]*>/g, ' ')
    .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(Number.parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&amp;/g, '&')
    .toLowerCase()
    .replace(/\s+/g, ' ')} `;
/** Whether every word of `label` is among the SVG's words (its text nodes may break it up). */
const shows = (words: string, label: string) =>
  label
    .toLowerCase()
    .split(/\s+/)
    .every((w) => words.includes(w));

describe('Kroki sample corpus', { timeout: 900_000, concurrency: 4 }, () => {
  let app: FastifyInstance;
  let available: Map<string, { available: boolean; reason?: string }>;
  before(async () => {
    app = await buildTestServer({
      // One Chromium and no spare render process: the samples are about what each engine draws, and
      // with four at once a second browser started and a spare loaded the engines again (CPU that
      // drew nothing new). The pools' sizes are tested in browser.test.ts and process-pool.test.ts.
      overrides: {
        diagrams: { prestart: false, workers: 1, timeoutMs: 60_000, mermaidBrowsers: 1, renderSpares: 0 },
      },
    });
    const h = await app.inject({ url: '/plantuml/health' });
    assert.equal(h.statusCode, 200);
    const body = JSON.parse(h.body) as { languages: { type: string; available: boolean; reason?: string }[] };
    available = new Map(body.languages.map((l) => [l.type, l]));
  });
  after(async () => {
    await app?.close();
  });

  /** The three request shapes' answers for one source. */
  async function renderAll(type: string, format: string, source: string) {
    const get = await app.inject({ url: `/plantuml/${type}/${format}/${kroki(source)}` });
    const post = await app.inject({
      method: 'POST',
      url: `/plantuml/${type}/${format}`,
      payload: source,
      headers: { 'content-type': 'text/plain' },
    });
    const json = await app.inject({
      method: 'POST',
      url: '/plantuml/',
      payload: { diagram_source: source, diagram_type: type, output_format: format },
    });
    return { get, post, json };
  }

  function assertSvg(what: string, status: number, body: string, labels: readonly string[]) {
    assert.equal(status, 200, `${what}: ${body.slice(0, 300)}`);
    assert.equal(xmlProblem(body, 'svg'), null, `${what} is well-formed SVG`);
    const words = wordsOf(body);
    for (const l of labels) assert.ok(shows(words, l), `${what} shows "${l}"`);
  }

  it('checks well-formedness (the check itself)', () => {
    assert.equal(
      xmlProblem('<?xml version="1.0"?><svg a=\'x>y\'><g><text>a &amp; b</text></g></svg>', 'svg'),
      null,
    );
    assert.match(String(xmlProblem('<svg><g></svg>', 'svg')), /closes no open/);
    assert.match(String(xmlProblem('<svg>a & b</svg>', 'svg')), /bare &/);
    assert.match(String(xmlProblem('<html></html>', 'svg')), /root element is <html>/);
    assert.match(String(xmlProblem('<svg/><svg/>', 'svg')), /second root/);
  });

  it('keeps every sample file its index names, with labels taken from its source', () => {
    for (const s of SAMPLES) {
      const source = readFileSync(new URL(s.file, DIR), 'utf8');
      for (const l of s.labels) assert.ok(source.includes(l), `${s.file}: "${l}" is in the source`);
      assert.match(s.commit, /^[0-9a-f]{40}$/);
    }
  });

  for (const s of SAMPLES) {
    it(`renders ${s.file} as ${s.type} through GET, POST and JSON POST`, async (t) => {
      const lang: Language | undefined = languageOf(s.type);
      if (!lang) return t.skip(`${s.type}: ${NOT_SERVED[s.type] ?? 'not a devutil language'}`);
      const a = available.get(s.type);
      if (!a?.available) {
        if (lang.kind === 'thread') assert.fail(`${s.type} unavailable: ${a?.reason}`);
        return t.skip(missing(`${s.type}: ${a?.reason}`));
      }
      const source = readFileSync(new URL(s.file, DIR), 'utf8');
      // The Mermaid types only a browser draws go to the browser pool, on by default where a
      // Chromium is found (CI installs one: missing there, the test fails).
      if (lang.engine === 'mermaid' && !BROWSERLESS.has(mermaidType(source)) && !findChromium())
        return t.skip(missing(`${s.file}: a Mermaid type drawn in a browser, and no Chromium is installed`));
      const format = lang.formats.includes('svg') ? 'svg' : lang.formats[0]!;
      const r = await renderAll(s.type, format, source);
      for (const [shape, res] of Object.entries(r)) {
        if (format === 'svg') assertSvg(`${shape} ${s.file}`, res.statusCode, res.body, s.labels);
        else {
          assert.equal(res.statusCode, 200, `${shape} ${s.file}: ${res.body.slice(0, 300)}`);
          assert.ok(res.rawPayload.subarray(0, 4).equals(PNG), `${shape} ${s.file} is PNG`);
        }
      }
    });
  }

  describe('C4-PlantUML includes, offline from the bundled library', () => {
    const RAW = 'https://raw.githubusercontent.com';
    const FORMS: [string, string][] = [
      ['C4_Context', '!include C4_Context.puml'],
      ['C4_Container', '!include <C4/C4_Container>'],
      ['C4_Context', `!includeurl ${RAW}/plantuml-stdlib/C4-PlantUML/master/C4_Context.puml`],
      ['C4_Container', `!include ${RAW}/plantuml-stdlib/C4-PlantUML/v2.10.0/C4_Container.puml`],
      ['C4_Component', `!includeurl ${RAW}/RicardoNiepel/C4-PlantUML/release/1-0/C4_Component.puml`],
      [
        'C4_Deployment',
        '!include https://github.com/plantuml-stdlib/C4-PlantUML/raw/master/C4_Deployment.puml',
      ],
      ['C4_Dynamic', '!include C4_Dynamic.puml'],
    ];
    for (const [file, line] of FORMS) {
      it(`renders ${line}`, async () => {
        const source = `@startuml\n${line}\nPerson(user, "Shopper")\nSystem(shop, "Webshop ${file}")\nRel(user, shop, "Buys in")\n@enduml`;
        for (const type of ['c4plantuml', 'plantuml']) {
          const r = await renderAll(type, 'svg', source);
          for (const [shape, res] of Object.entries(r))
            assertSvg(`${type} ${shape}`, res.statusCode, res.body, [`Webshop ${file}`, 'Buys in']);
        }
      });
    }
  });
});
