// ntfy and Gotify notifications without HTTP: Markdown to Telegram HTML (markdown.ts), the message
// layout within Telegram's 4096 characters (notice.ts), and how ntfy's and Gotify's requests are read
// (ntfy.ts, gotify.ts). Every message is checked with the Bot API stand-in's own HTML parser: it
// parses, and the sender's text never becomes an entity of its own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseHtml } from '../../../test/fixtures/telegram/markup.ts';
import { AppError } from '../../infra/http/errors.ts';
import { gotifyMessage, gotifyNotice, gotifyToken } from './gotify.ts';
import { markdownToHtml } from './markdown.ts';
import { cut, type Notice, noticeMessage } from './notice.ts';
import { ntfyJson, ntfyPublish } from './ntfy.ts';

const TOKEN = `tgr_${'a'.repeat(43)}`;
const notice = (o: Partial<Notice>): Notice => ({
  title: '',
  message: 'm',
  markdown: false,
  priority: 3,
  tags: [],
  click: '',
  attach: null,
  ...o,
});
const textOf = (n: Notice) => noticeMessage(n)['text'] as string;

describe('Markdown to Telegram HTML', () => {
  const table: [string, string, string][] = [
    ['bold and italic', '**b** __b__ *i* _i_', '<b>b</b> <b>b</b> <i>i</i> <i>i</i>'],
    ['strike and code', '~~s~~ `a<b`', '<s>s</s> <code>a&lt;b</code>'],
    ['a heading', '## Backup *done*', '<b>Backup <i>done</i></b>'],
    [
      'a link',
      '[the log](https://ci.example.com/1?a=1&b=2)',
      '<a href="https://ci.example.com/1?a=1&amp;b=2">the log</a>',
    ],
    ['an image as a link', '![](https://x.example/p.png)', '<a href="https://x.example/p.png">image</a>'],
    ['an autolink', '<https://x.example/>', '<a href="https://x.example/">https://x.example/</a>'],
    ['a javascript: link as text', '[x](javascript:alert(1))', '[x](javascript:alert(1))'],
    ['lists and a rule', '- a\n* b\n2. c\n---', '• a\n• b\n2. c\n———'],
    ['a quote', '> one\n> **two**', '<blockquote>one\n<b>two</b></blockquote>'],
    [
      'a fenced block',
      '```sh\necho "<x>"\n```',
      '<pre><code class="language-sh">echo "&lt;x&gt;"</code></pre>',
    ],
    ['an unclosed fence', '```\nrest <b>', '<pre>rest &lt;b&gt;</pre>'],
    ['snake_case and spaced stars stay', 'my_var_name and 2 * 3 * 4', 'my_var_name and 2 * 3 * 4'],
    ['escapes', '\\*not\\* \\_this\\_', '*not* _this_'],
    [
      'HTML written by the sender',
      '<b>x</b> &amp; <a href="https://e.com">y</a>',
      '&lt;b&gt;x&lt;/b&gt; &amp;amp; &lt;a href="https://e.com"&gt;y&lt;/a&gt;',
    ],
    ['code inside bold is plain', '**a `b` c**', '<b>a b c</b>'],
    ['unbalanced markers stay', '**a *b', '**a *b'],
  ];
  for (const [what, md, html] of table) it(`converts ${what}`, () => assert.equal(markdownToHtml(md), html));

  // Markdown's own characters, HTML's, and text: what a hostile sender would mix.
  const chars = fc.constantFrom(
    ...'*_~`[]()!<>&"#->\\| \nab1'.split(''),
    'https://e.co/x',
    '```',
    '\ud83d\ude00',
  );
  const source = fc.array(chars, { maxLength: 300 }).map((a) => a.join(''));

  it('always writes HTML Telegram parses, with no more visible text than the source', () => {
    fc.assert(
      fc.property(source, (md) => {
        const parsed = parseHtml(markdownToHtml(md));
        assert.ok(parsed.text.length <= md.length, `${JSON.stringify(md)} grew`);
        for (const e of parsed.entities)
          assert.ok(
            ['bold', 'italic', 'strikethrough', 'code', 'pre', 'text_link', 'blockquote'].includes(e.type),
          );
      }),
      { numRuns: 1500 },
    );
  });

  it('keeps the text of plain messages as sent, whatever it holds', () => {
    fc.assert(
      fc.property(source, fc.string({ maxLength: 80 }), (m, title) => {
        fc.pre(m.trim() !== '');
        const parsed = parseHtml(textOf(notice({ message: m, title })));
        assert.ok(parsed.text.includes(m.trim()), 'the text is shown as written');
        assert.deepEqual(
          parsed.entities.map((e) => e.type).filter((t) => t !== 'bold'),
          [],
          'no entity from the text',
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe('one Telegram message per notification', () => {
  it('puts tag emoji and the priority mark before the title, other tags, the link and the attachment after', () => {
    const p = noticeMessage(
      notice({
        title: 'Backup <done>',
        message: 'all good',
        priority: 5,
        tags: ['warning', 'host-1', 'tada'],
        click: 'https://ci.example.com/42',
        attach: { url: 'https://files.example.com/r.pdf', name: 'r.pdf' },
      }),
    );
    const parsed = parseHtml(p['text'] as string);
    assert.equal(
      parsed.text,
      '⚠️🎉‼️ Backup <done>\nall good\n\n🏷 host-1\n🔗 https://ci.example.com/42\n📎 r.pdf',
    );
    assert.deepEqual(
      parsed.entities.map((e) => [e.type, e.url]),
      [
        ['bold', undefined],
        ['text_link', 'https://ci.example.com/42'],
        ['text_link', 'https://files.example.com/r.pdf'],
      ],
    );
    assert.deepEqual(p['link_preview_options'], {
      url: 'https://files.example.com/r.pdf',
      prefer_large_media: true,
    });
    assert.equal(p['disable_notification'], undefined);
  });

  it('sends priorities 1 and 2 silently', () => {
    assert.equal(noticeMessage(notice({ priority: 2 }))['disable_notification'], true);
    assert.equal(noticeMessage(notice({ priority: 3 }))['disable_notification'], undefined);
  });

  it('shows a click URL that is not http(s) as text, never as a link', () => {
    const parsed = parseHtml(textOf(notice({ click: 'javascript:alert(1)' })));
    assert.equal(parsed.entities.length, 0);
    assert.match(parsed.text, /🔗 javascript:alert\(1\)/);
  });

  it('cuts a long text so the whole message stays within 4096 characters, never inside an emoji', () => {
    for (const markdown of [false, true]) {
      const parsed = parseHtml(
        textOf(
          notice({
            title: 'T'.repeat(400),
            message: '😀<&'.repeat(3000),
            markdown,
            tags: Array.from({ length: 30 }, (_, i) => `tag-${i}`),
            click: `https://e.com/${'x'.repeat(2000)}`,
          }),
        ),
      );
      assert.ok(parsed.text.length <= 4096, `${parsed.text.length}`);
      assert.ok(parsed.text.length > 3000, 'the text fills what is left');
      assert.doesNotMatch(parsed.text, /[\ud800-\udbff](?![\udc00-\udfff])/, 'no half emoji');
      assert.match(parsed.text, /…/);
    }
    assert.equal(cut('ab😀', 3), 'ab…');
  });
});

describe('ntfy requests', () => {
  const pub = (headers: Record<string, string>, body = '', query: Record<string, unknown> = {}) =>
    ntfyPublish({ headers, query, body: Buffer.from(body) });
  const code = (fn: () => unknown, n: string) =>
    assert.throws(fn, (e: unknown) => e instanceof AppError && e.code === `NTFY_${n}`);

  it('reads headers before the query string, under every name ntfy knows', () => {
    const n = pub({ 'x-title': 'h', t: 'short', ta: 'a,b', p: 'urgent' }, ' body \n', {
      title: 'q',
      click: 'https://c.e',
    });
    assert.deepEqual(
      [n.title, n.message, n.tags, n.priority, n.click],
      ['h', 'body', ['a', 'b'], 5, 'https://c.e'],
    );
    assert.equal(pub({}, '', { message: 'one\\ntwo', t: 'x' }).message, 'one\ntwo');
    assert.equal(pub({}).message, 'triggered');
  });

  it('reads UTF-8 and RFC 2047 header values as ntfy does', () => {
    assert.equal(pub({ title: Buffer.from('Grüße 😀').toString('latin1') }).title, 'Grüße 😀');
    assert.equal(pub({ title: `=?UTF-8?B?${Buffer.from('Grüße').toString('base64')}?=` }).title, 'Grüße');
    assert.equal(pub({ title: '=?utf-8?q?caf=C3=A9_au?= =?utf-8?q?_lait?=' }).title, 'café au lait');
  });

  it('takes Markdown from its header or a text/markdown body', () => {
    assert.equal(pub({ markdown: 'yes' }).markdown, true);
    assert.equal(pub({ 'content-type': 'text/markdown; charset=utf-8' }).markdown, true);
    assert.equal(pub({}, '', { md: '1' }).markdown, true);
    assert.equal(pub({ markdown: 'no' }).markdown, false);
  });

  it("refuses what ntfy's server refuses with that feature off, with ntfy's codes", () => {
    code(() => pub({ priority: 'loud' }), '40007');
    code(() => pub({ attach: 'ftp://x/y' }), '40013');
    code(() => pub({ filename: 'a.txt' }, 'x'), '40014');
    code(() => ntfyPublish({ headers: {}, query: {}, body: Buffer.from([0xff, 0xfe]) }), '40014');
    code(() => pub({ email: 'a@b.c' }), '40001');
    code(() => pub({ delay: '10m' }), '40000');
    code(() => pub({ 'x-call': 'yes' }), '40000');
  });

  it('names an attachment by its URL as ntfy does', () => {
    assert.deepEqual(pub({ attach: 'https://e.com/a/b%20c.png' }).attach, {
      url: 'https://e.com/a/b%20c.png',
      name: 'b c.png',
    });
    assert.equal(pub({ attach: 'https://e.com/' }).message, 'You received a file: attachment');
  });

  it('reads a JSON publish and refuses JSON that could be read two ways', () => {
    const { topic, notice: n } = ntfyJson(
      Buffer.from(
        JSON.stringify({ topic: TOKEN, message: 'm', title: 't', tags: ['x'], priority: 4, markdown: true }),
      ),
      32,
    );
    assert.deepEqual([topic, n.title, n.tags, n.priority, n.markdown], [TOKEN, 't', ['x'], 4, true]);
    code(() => ntfyJson(Buffer.from(`{"topic":"${TOKEN}","topic":"tgr_other"}`), 32), '40024');
    code(() => ntfyJson(Buffer.from('[1]'), 32), '40017');
    code(() => ntfyJson(Buffer.from('{"title":5}'), 32), '40024');
  });
});

describe('Gotify requests', () => {
  const req = (headers: Record<string, string>, body = '', query: Record<string, unknown> = {}) => ({
    headers,
    query,
    body: Buffer.from(body),
  });

  it('takes the token from ?token=, X-Gotify-Key or Bearer, and refuses two different ones', () => {
    assert.equal(gotifyToken(req({}, '', { token: TOKEN })), TOKEN);
    assert.equal(gotifyToken(req({ 'x-gotify-key': TOKEN })), TOKEN);
    assert.equal(gotifyToken(req({ authorization: `Bearer ${TOKEN}`, 'x-gotify-key': TOKEN })), TOKEN);
    assert.throws(
      () => gotifyToken(req({})),
      (e: AppError) => e.status === 401,
    );
    assert.throws(
      () => gotifyToken(req({ 'x-gotify-key': TOKEN }, '', { token: `${TOKEN.slice(0, -1)}b` })),
      (e: AppError) => e.status === 400,
    );
  });

  it('reads JSON, a form and multipart; the form before the query string', async () => {
    const json = await gotifyMessage(
      req(
        { 'content-type': 'application/json' },
        '{"title":"t","message":"m","priority":9,"extras":{"a":1}}',
      ),
      32,
    );
    assert.deepEqual(json, { title: 't', message: 'm', priority: 9, extras: { a: 1 } });
    const form = await gotifyMessage(
      req({ 'content-type': 'application/x-www-form-urlencoded' }, 'message=form&priority=2', {
        message: 'q',
        title: 'qt',
      }),
      32,
    );
    assert.deepEqual(form, { title: 'qt', message: 'form', priority: 2, extras: null });
    const b = 'xYz';
    const multi = await gotifyMessage(
      req(
        { 'content-type': `multipart/form-data; boundary=${b}` },
        `--${b}\r\nContent-Disposition: form-data; name="message"\r\n\r\nmulti ü\r\n--${b}--\r\n`,
      ),
      32,
    );
    assert.equal(multi.message, 'multi ü');
  });

  it("refuses what Gotify refuses, in Gotify's words", async () => {
    const status = async (r: ReturnType<typeof req>, n: number, re: RegExp) =>
      assert.rejects(gotifyMessage(r, 32), (e: AppError) => e.status === n && re.test(e.message));
    await status(
      req({ 'content-type': 'application/json' }, '{"title":"x"}'),
      400,
      /Field 'message' is required/,
    );
    await status(
      req({ 'content-type': 'application/json' }, '{"message":"x","priority":"5"}'),
      400,
      /priority/,
    );
    await status(req({}, 'message=x&priority=high'), 400, /priority/);
    await status(req({ 'content-type': 'application/xml' }, '<m/>'), 415, /JSON/);
  });

  it("maps Gotify's priorities, extras and the application's name onto the notification", () => {
    const n = gotifyNotice(
      {
        title: '',
        message: 'm',
        priority: 8,
        extras: {
          'client::display': { contentType: 'text/markdown' },
          'client::notification': { click: { url: 'https://e.com' }, bigImageUrl: 'https://e.com/i.png' },
        },
      },
      'ci',
    );
    assert.deepEqual(
      [n.title, n.markdown, n.priority, n.click, n.attach?.url],
      ['ci', true, 4, 'https://e.com', 'https://e.com/i.png'],
    );
    const p = (priority: number | null) =>
      gotifyNotice({ title: 't', message: 'm', priority, extras: null }, '').priority;
    assert.deepEqual([p(null), p(0), p(3), p(5), p(7), p(9), p(10)], [3, 2, 2, 3, 3, 4, 5]);
  });
});
