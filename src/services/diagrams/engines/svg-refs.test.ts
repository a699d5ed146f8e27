// What counts as reaching outside an SVG: what its reader's browser would fetch to show it, not a
// link the reader may follow.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { externalReferences, localOnly } from './svg-refs.ts';

describe('external references of an SVG', { timeout: 10_000 }, () => {
  it('lists what a browser would fetch and leaves links, fragments and data: URLs', () => {
    const svg = [
      '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">',
      "<style>@import url('https://fonts.example/css'); .a { fill: url(#g); background: url(http://x.example/b.png) }</style>",
      '<image href="https://img.example/p.png"/><use xlink:href="http://sprites.example/s.svg#i"/>',
      '<image href="data:image/png;base64,AAAA"/><use href="#local"/>',
      '<a href="https://bpmn.io"><text>bpmn.io</text></a><svg:a xlink:href="https://example.com/doc">x</svg:a>',
      '</svg>',
    ].join('');
    assert.deepEqual(externalReferences(svg), [
      '@import https://fonts.example/css',
      'url(http://x.example/b.png)',
      'href=https://img.example/p.png',
      'xlink:href=http://sprites.example/s.svg#i',
    ]);
  });

  it('drops the fetched ones from styles, and nothing from labels', () => {
    const svg =
      "<svg><style>@import url('https://fonts.example/css'); text { font-family: Inter, system-ui }</style><text>url(http://label)</text></svg>";
    const out = localOnly(svg);
    assert.deepEqual(externalReferences(out.replace('<text>url(http://label)</text>', '')), []);
    assert.match(out, /<text>url\(http:\/\/label\)<\/text>/);
    assert.match(out, /system-ui/);
  });
});
