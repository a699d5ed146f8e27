// planMessage and escapeFor without a server: field rules, defaults, forwarding, and escaping that
// round-trips through the fake Bot API's parsers for every mode.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseHtml, parseMarkdown, parseMarkdownV2 } from '../../../test/fixtures/telegram/markup.ts';
import { escapeFor } from './escape.ts';
import { isBotKey, keyId, scrubKey } from './key.ts';
import { BadInput, planMessage } from './message.ts';

const KEY = '123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11';
const opts = { defaultText: 'ping.' };

describe('planMessage', () => {
  it("accepts the docs' example token and refuses anything that could change the URL path", () => {
    assert.equal(isBotKey(KEY), true);
    for (const bad of [
      '123456',
      ':abc',
      `${KEY}/x`,
      `${KEY}?x`,
      `${KEY}#x`,
      `${KEY} `,
      `1:${'a'.repeat(81)}`,
      `x${KEY}`,
    ])
      assert.equal(isBotKey(bad), false, bad);
  });

  it('hashes the key to a stable id that does not contain it, and scrubs it from text', () => {
    assert.equal(keyId(KEY), keyId(KEY));
    assert.notEqual(keyId(KEY), keyId(`${KEY}x`));
    assert.equal(keyId(KEY).includes('123456'), false);
    assert.equal(scrubKey(`a ${KEY} b ${encodeURIComponent(`${KEY}:`)}`, KEY).includes('ABC-DEF'), false);
  });

  it('builds MarkdownV2 sendMessage parameters from a string', () => {
    assert.deepEqual(planMessage({ apiKey: KEY, chatId: '-1001234', msgText: '*hi*' }, opts), {
      key: KEY,
      chatId: '-1001234',
      params: { chat_id: '-1001234', text: '*hi*', parse_mode: 'MarkdownV2' },
    });
  });

  it('escapes the default text for the mode, so it is always valid markup', () => {
    const p = planMessage({ apiKey: KEY, chatId: 5 }, opts).params;
    assert.equal(p['text'], 'ping\\.');
    assert.equal(parseMarkdownV2(p['text'] as string).text, 'ping.');
  });

  it('keeps a caller parse_mode, and escapes msgText.text for it when asked', () => {
    const p = planMessage(
      { apiKey: KEY, chatId: 5, escape: true, msgText: { text: 'a<b', parse_mode: 'HTML' } },
      opts,
    );
    assert.deepEqual(p.params, { chat_id: 5, text: 'a&lt;b', parse_mode: 'HTML' });
  });

  it('names the field in every refusal', () => {
    const cases: [unknown, RegExp][] = [
      [null, /body/],
      [{ chatId: 1 }, /apiKey is required/],
      [{ apiKey: KEY }, /chatId is required/],
      [{ apiKey: KEY, chatId: 0 }, /chatId/],
      [{ apiKey: KEY, chatId: Number.MAX_SAFE_INTEGER + 2 }, /chatId/],
      [{ apiKey: KEY, chatId: '@a' }, /chatId/],
      [{ apiKey: KEY, chatId: 1, msgText: { text: 'x', parse_mode: 1 } }, /msgText\.parse_mode/],
      [{ apiKey: KEY, chatId: 1, msgText: true }, /msgText/],
    ];
    for (const [body, msg] of cases)
      assert.throws(
        () => planMessage(body, opts),
        (e: unknown) => e instanceof BadInput && msg.test(e.message),
      );
  });

  it('counts the 4096 limit in UTF-16 code units like Telegram', () => {
    const emoji = '😀'.repeat(2048); // 4096 code units
    assert.equal(planMessage({ apiKey: KEY, chatId: 1, msgText: emoji }, opts).params['text'], emoji);
    assert.throws(() => planMessage({ apiKey: KEY, chatId: 1, msgText: `${emoji}a` }, opts), /over 4096/);
  });
});

describe('escapeFor', () => {
  // A fixed-seed generator: the same strings every run, rich in reserved characters.
  let seed = 42;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const alphabet = [...'_*[]()~`>#+-=|{}.!\\&<>"\' \nabcXYZ019', 'é', '😀', '\u200b'];
  const samples = Array.from({ length: 300 }, () =>
    Array.from(
      { length: 1 + Math.floor(rnd() * 40) },
      () => alphabet[Math.floor(rnd() * alphabet.length)],
    ).join(''),
  );

  it('round-trips arbitrary text through MarkdownV2', () => {
    for (const s of samples)
      assert.equal(parseMarkdownV2(escapeFor('MarkdownV2', s)).text, s, JSON.stringify(s));
  });

  it('round-trips arbitrary text through HTML', () => {
    for (const s of samples) assert.equal(parseHtml(escapeFor('HTML', s)).text, s, JSON.stringify(s));
  });

  it('round-trips arbitrary text through legacy Markdown', () => {
    for (const s of samples) assert.equal(parseMarkdown(escapeFor('Markdown', s)).text, s, JSON.stringify(s));
  });

  it('leaves text alone for mode none', () => {
    assert.equal(escapeFor('none', '*a*.'), '*a*.');
  });
});
