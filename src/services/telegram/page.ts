// The Message relay section of the home page: examples built from the configured public URLs.
import { example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';

export const telegramPage: PageSection = {
  nav: 'Telegram',
  title: 'Message relay',
  lead: 'Sends Telegram bot messages for you when your machine cannot reach the Telegram Bot API: one POST, a Bot API base URL for bot libraries and Alertmanager, and recipient tokens that send to one chat without the bot key, also from any app with an ntfy or Gotify setting.',
  body(p) {
    const b = p.urls.base;
    const post = `curl -X POST ${b}/rest/api/v1/telegram -H 'Content-Type: application/json' \\\n  -d `;
    const tgPlain = `${post}'{"apiKey":"<BOT_KEY>","chatId":"@mychannel","msgText":"Build #42 passed (100%)!","escape":true}'`;
    const tgObject = `${post}'{"apiKey":"<BOT_KEY>","chatId":"<CHAT_ID>","msgText":{"text":"<b>done</b>","parse_mode":"HTML","disable_notification":true}}'`;
    const curl = `curl -X POST ${b}/rest/api/v1/telegram \\\n  -H 'Content-Type: application/json' \\\n  -d '{"apiKey":"<BOT_KEY>","chatId":"<CHAT_ID>","msgText":"Hello from *devutil*"}'`;
    const t = p.urls.telegram;
    const grammy = `new Bot('<BOT_KEY>', { client: { apiRoot: '${t}' } })   // grammY; any Bot API library has this setting`;
    const register = `curl ${t}/recipients -H 'Authorization: Bearer <BOT_KEY>' \\\n  -H 'Content-Type: application/json' -d '{"chat_id":"@mychannel"}'`;
    const viaToken = `curl ${t}/r/<TOKEN> -H 'Content-Type: text/plain' --data-binary 'deploy 42 done'`;
    const alert = `webhook_configs:\n  - url: ${t}/r/<TOKEN>/alertmanager`;
    const ntfy = `ntfy server: ${t}   topic: <TOKEN>\ncurl -H 'Title: Backup' -H 'Tags: warning' -d 'disk 91% full' ${t}/<TOKEN>`;
    const gotify = `Gotify server: ${t}   application token: <TOKEN>\ncurl '${t}/message?token=<TOKEN>' -F title=Backup -F message=done`;
    return html`<div class="split"><div class="examples">
${example('Send (MarkdownV2 by default)', curl)}
${example('Plain text, escaped for the parse mode by the server', tgPlain)}
${example('An object: any sendMessage field is forwarded', tgObject)}
${example('A Bot API base URL for bot libraries: every method, uploads, long polls', grammy)}
${example('A recipient token: sends to one chat, without the bot key', register)}
${example('Send with the token (CI jobs, scripts)', viaToken)}
${example('Alertmanager webhook, one readable message per alert group', alert)}
${example("An app's ntfy setting: the token is the topic", ntfy)}
${example("An app's Gotify setting: the token is the application token", gotify)}
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
</form></div>`;
  },
};
