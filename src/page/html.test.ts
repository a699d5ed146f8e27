// The escaping template tag every page section is written with.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { escapeHtml, html } from './html.ts';

it('escapes interpolated values in the template tag', { timeout: 5000 }, () => {
  const evil = '"><script>alert(1)</script>';
  assert.equal(html`<a title="${evil}">${evil}</a>`.value.includes('<script>'), false);
  assert.equal(escapeHtml(`<&>"'`), '&lt;&amp;&gt;&quot;&#39;');
  assert.equal(html`${html`<b>${'x<'}</b>`}`.value, '<b>x&lt;</b>');
});
