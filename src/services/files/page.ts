// The File storage section of the home page: examples built from the configured public URLs.
import { humanBytes } from '../../infra/config/schema.ts';
import { copyField, example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';

export const filesPage: PageSection = {
  nav: 'Files',
  title: 'File storage',
  lead: (p) =>
    `Store a file under a key you choose and download it later under its original name; text is compressed on the way in (uploads up to ${humanBytes(p.config.files.maxBytes)}).`,
  body(p) {
    const b = p.urls.base;
    return html`<div class="split"><div class="examples">
${example('Upload, keeping the owner token (the X-Owner-Token response header, shown once) in TOKEN', `TOKEN=$(curl -fsS -D - -o /dev/null -F file=@report.txt ${b}/api/file/report.txt \\\n  | awk 'tolower($1) == "x-owner-token:" { print $2 }' | tr -d '\\r')`)}
${example('Download under the original name into downloads/, not over the report.txt you uploaded (-f: an error is not saved as the file)', `curl -fOJ --output-dir downloads --create-dirs ${b}/api/file/report.txt`)}
${example('Replace or delete with the owner token', `curl -f -H "X-Owner-Token: $TOKEN" -F file=@report.txt ${b}/api/file/report.txt\ncurl -f -X DELETE -H "X-Owner-Token: $TOKEN" ${b}/api/file/report.txt`)}
${example('The transfer.sh way: the server picks the key, the answer is the link (the delete link is in X-Url-Delete)', `curl -T report.txt ${b}/\ncurl -F file=@a.log -F file=@b.log ${b}/   # a link each, then one zip of both`)}
${example('Flameshot, or any program that writes to standard output', `flameshot gui --raw | curl -fsS -T - ${b}/screenshot.png`)}
<p class="clients">Ready for your tools: <a href="/devutil.sxcu" download>ShareX uploader (.sxcu)</a> (double-click to import) ·
<a href="/upload.sh" download>upload.sh</a> (<code>sh upload.sh [-d DAYS] [-m DOWNLOADS] [-n NAME] [FILE...]</code>)</p>
</div>
<form class="tool" id="upload-form" novalidate data-resumable-over="${String(p.config.files.resumableOverBytes)}">
<label class="drop" id="drop" for="upload-file"><span class="drop-text" id="drop-text">Drop a file here or <u>choose one</u></span>
<input id="upload-file" name="file" type="file" required></label>
<div class="field"><label for="upload-key">Key</label>
<input id="upload-key" name="key" type="text" required maxlength="128" autocomplete="off" spellcheck="false" aria-describedby="upload-key-help">
<small id="upload-key-help">1–128 of A–Z a–z 0–9 . _ - (not starting with a dot). Keys are case-sensitive.</small></div>
<div class="field" id="upload-token-field" hidden><label for="upload-token">Owner token (only to replace a file you uploaded)</label>
<input id="upload-token" type="password" autocomplete="off" spellcheck="false"></div>
<div class="actions"><button type="submit" id="upload-go" disabled data-needs-js>Upload</button>
<button type="button" id="upload-cancel" class="secondary" hidden>Cancel</button>
<button type="button" id="upload-delete" class="secondary" hidden>Delete this file</button></div>
<div class="progress-row"><progress id="upload-progress" max="100" value="0" aria-label="Upload progress"></progress><span id="upload-pct" aria-live="polite">0%</span></div>
<p class="status" id="upload-status" role="status"></p>
<div id="upload-result" hidden>
${copyField('upload-owner', 'Owner token (keep it: it is shown once)')}
${copyField('upload-link', 'Download link')}
<p><a id="upload-download" href="#">Download</a></p>
<img id="upload-qr" class="qr" width="160" height="160" alt="QR code of the download link" hidden>
<div class="example"><div class="example-head"><span>The same file with curl</span><button type="button" class="copy" data-copy hidden>Copy</button></div><pre><code id="upload-cmds"></code></pre></div>
<pre class="json" id="upload-json" tabindex="0" aria-label="Upload response"></pre></div>
</form></div>`;
  },
};
