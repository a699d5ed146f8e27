// Home page sections for the data utilities: file storage, caller IP, random image, message relay.
// Examples are built from the configured public URLs (ctx.urls), never from the request's Host.
import { copyField, example, html, type Raw } from './html.ts';
import type { PageInput } from './page.ts';

export function section(id: string, title: string, lead: string, on: boolean, body: Raw): Raw {
  return html`<section id="${id}" class="card" aria-labelledby="${id}-h">
<h2 id="${id}-h"><a href="#${id}" class="anchor">${title}</a></h2>
<p class="lead">${lead}</p>
${on ? body : html`<p class="off" role="note">This utility is not enabled on this server.</p>`}
</section>`;
}

function humanBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1 && n % 1024 === 0) {
    n /= 1024;
    i++;
  }
  return `${n} ${units[i]}`;
}

export function filesSection(p: PageInput): Raw {
  const b = p.urls.base;
  return section(
    'files',
    'File storage',
    `Store a file under a key you choose and download it later under its original name; text is compressed on the way in (uploads up to ${humanBytes(p.maxUploadBytes)}).`,
    p.enabled.files,
    html`<div class="split"><div class="examples">
${example('Upload', `curl -F file=@report.txt ${b}/api/file/report.txt`)}
${example('Download under the original name', `curl -OJ ${b}/api/file/report.txt`)}
${example('Replace or delete with the owner token from the first upload', `curl -H 'X-Owner-Token: <TOKEN>' -F file=@report.txt ${b}/api/file/report.txt\ncurl -X DELETE -H 'X-Owner-Token: <TOKEN>' ${b}/api/file/report.txt`)}
</div>
<form class="tool" id="upload-form" novalidate>
<label class="drop" id="drop" for="upload-file"><span class="drop-text" id="drop-text">Drop a file here or <u>choose one</u></span>
<input id="upload-file" name="file" type="file" required></label>
<div class="field"><label for="upload-key">Key</label>
<input id="upload-key" name="key" type="text" required maxlength="128" autocomplete="off" spellcheck="false" aria-describedby="upload-key-help">
<small id="upload-key-help">1–128 of A–Z a–z 0–9 . _ - (not starting with a dot). Keys are case-sensitive.</small></div>
<div class="field" id="upload-token-field" hidden><label for="upload-token">Owner token (only to replace a file you uploaded)</label>
<input id="upload-token" type="password" autocomplete="off" spellcheck="false"></div>
<div class="actions"><button type="submit" id="upload-go" disabled data-needs-js>Upload</button>
<button type="button" id="upload-cancel" class="secondary" hidden>Cancel</button></div>
<div class="progress-row"><progress id="upload-progress" max="100" value="0" aria-label="Upload progress"></progress><span id="upload-pct" aria-live="polite">0%</span></div>
<p class="status" id="upload-status" role="status"></p>
<div id="upload-result" hidden>
${copyField('upload-owner', 'Owner token (keep it: it is shown once)')}
${copyField('upload-link', 'Download link')}
<p><a id="upload-download" href="#">Download</a></p>
<div class="example"><div class="example-head"><span>The same file with curl</span><button type="button" class="copy" data-copy hidden>Copy</button></div><pre><code id="upload-cmds"></code></pre></div>
<pre class="json" id="upload-json" tabindex="0" aria-label="Upload response"></pre></div>
</form></div>`,
  );
}

export function ipSection(p: PageInput): Raw {
  const b = p.urls.base;
  return section(
    'ip',
    'Caller IP',
    'Returns the public address your requests come from, as JSON or as plain text for scripts.',
    p.enabled.ip,
    html`<div class="split"><div class="examples">
${example('JSON', `curl ${b}/rest/api/v1/ip`)}
${example('Plain text, for scripts', `curl '${b}/api/ip?format=text'`)}
</div>
<div class="tool"><p class="big">Your address: <strong id="ip-value">${p.clientIp}</strong></p>
<div class="actions"><button type="button" id="ip-refresh" disabled data-needs-js>Check again</button></div>
<p class="status" id="ip-status" role="status"></p></div></div>`,
  );
}

export function imageSection(p: PageInput): Raw {
  const b = p.urls.base;
  const preview = '/rest/api/v1/image?width=640&height=360&id=devutil';
  return section(
    'image',
    'Random image',
    'A WebP image, 1920×1080 by default: give an id for the same picture every time, a width or height to scale it, or both to crop it.',
    p.enabled.image,
    html`<div class="split"><div class="examples">
${example('Random wallpaper', `curl -o wallpaper.webp ${b}/rest/api/v1/image`)}
${example('Stable, 640 wide, grayscale', `curl -o thumb.webp '${b}/rest/api/v1/image?id=ocean&width=640&grayscale=1'`)}
${example('In HTML', `<img src="${b}/rest/api/v1/image?id=team&width=300&height=300" alt="">`)}
</div>
<form class="tool" id="image-form">
<div class="grid3">
<div class="field"><label for="image-width">Width</label><input id="image-width" type="number" min="1" max="4096" value="640" inputmode="numeric"></div>
<div class="field"><label for="image-height">Height</label><input id="image-height" type="number" min="1" max="4096" value="360" inputmode="numeric"></div>
<div class="field"><label for="image-id">Id</label><input id="image-id" type="text" value="devutil" maxlength="64" spellcheck="false"></div>
<div class="field"><label for="image-blur">Blur <output id="image-blur-out" for="image-blur">0</output></label><input id="image-blur" type="range" min="0" max="10" value="0"></div>
<div class="field"><label for="image-format">Format</label><select id="image-format"><option>webp</option><option>jpeg</option><option>png</option><option>avif</option></select></div>
<div class="field check"><input id="image-gray" type="checkbox"><label for="image-gray">Grayscale</label></div>
</div>
<div class="actions"><button type="button" id="image-shuffle" class="secondary" disabled data-needs-js>New random id</button></div>
<figure class="preview"><img id="image-preview" src="${preview}" width="640" height="360" alt="Random image preview" decoding="async"></figure>
${copyField('image-url', 'Image URL', `${b}${preview}`)}
<p class="status" id="image-status" role="status"></p>
</form></div>`,
  );
}

export function telegramSection(p: PageInput): Raw {
  const b = p.urls.base;
  const post = `curl -X POST ${b}/rest/api/v1/telegram -H 'Content-Type: application/json' \\\n  -d `;
  const tgPlain = `${post}'{"apiKey":"<BOT_KEY>","chatId":"@mychannel","msgText":"Build #42 passed (100%)!","escape":true}'`;
  const tgObject = `${post}'{"apiKey":"<BOT_KEY>","chatId":"<CHAT_ID>","msgText":{"text":"<b>done</b>","parse_mode":"HTML","disable_notification":true}}'`;
  const curl = `curl -X POST ${b}/rest/api/v1/telegram \\\n  -H 'Content-Type: application/json' \\\n  -d '{"apiKey":"<BOT_KEY>","chatId":"<CHAT_ID>","msgText":"Hello from *devutil*"}'`;
  return section(
    'telegram',
    'Message relay',
    'Sends a Telegram bot message for you when your machine cannot reach the Telegram Bot API; the answer is Telegram’s own message object.',
    p.enabled.telegram,
    html`<div class="split"><div class="examples">
${example('Send (MarkdownV2 by default)', curl)}
${example('Plain text, escaped for the parse mode by the server', tgPlain)}
${example('An object: any sendMessage field is forwarded', tgObject)}
</div>
<form class="tool" id="telegram-form" autocomplete="off">
<p class="note">Your bot key stays in this page: it is sent only with this request and never stored.</p>
<div class="field"><label for="tg-key">Bot key</label><input id="tg-key" type="password" required autocomplete="off" spellcheck="false" placeholder="123456:ABC-DEF…"></div>
<div class="field"><label for="tg-chat">Chat id</label><input id="tg-chat" type="text" required spellcheck="false" placeholder="123456789, -100… or @channel"></div>
<div class="field"><label for="tg-text">Message</label><textarea id="tg-text" rows="3">Hello from devutil!</textarea></div>
<div class="grid2">
<div class="field"><label for="tg-mode">Parse mode</label><select id="tg-mode"><option>MarkdownV2</option><option>HTML</option><option>Markdown</option><option value="none">none (plain text)</option></select></div>
<div class="field check"><input id="tg-escape" type="checkbox" checked><label for="tg-escape">Escape my text for the parse mode</label></div>
</div>
<div class="actions"><button type="submit" id="tg-send" disabled data-needs-js>Send</button></div>
<p class="status" id="tg-status" role="status"></p>
<pre class="json" id="tg-json" tabindex="0" aria-label="Relay response" hidden></pre>
</form></div>`,
  );
}
