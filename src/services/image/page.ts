// The Random image section of the home page: examples built from the configured public URLs.
import { copyField, example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';

export const imagePage: PageSection = {
  nav: 'Images',
  title: 'Random image',
  lead: 'A WebP image, 1920×1080 by default: give an id for the same picture every time, a width or height to scale it, or both to crop it.',
  body(p) {
    const b = p.urls.base;
    const preview = '/rest/api/v1/image?width=640&height=360&id=devutil';
    return html`<div class="split"><div class="examples">
${example('Random wallpaper', `curl -f -o wallpaper.webp ${b}/rest/api/v1/image`)}
${example('Stable, 640 wide, grayscale', `curl -f -o thumb.webp '${b}/rest/api/v1/image?id=ocean&width=640&grayscale=1'`)}
${example('In HTML', `<img src="${b}/rest/api/v1/image?id=team&width=300&height=300" alt="">`)}
</div>
<form class="tool" id="image-form">
<div class="grid3">
<div class="field"><label for="image-width">Width</label><input id="image-width" type="number" min="1" max="4096" value="640" inputmode="numeric"></div>
<div class="field"><label for="image-height">Height</label><input id="image-height" type="number" min="1" max="4096" value="360" inputmode="numeric"></div>
<div class="field"><label for="image-id">Id</label><input id="image-id" type="text" value="devutil" maxlength="64" spellcheck="false"></div>
<div class="field"><label for="image-blur">Blur <output id="image-blur-out" for="image-blur">0</output></label><input id="image-blur" type="range" min="0" max="10" value="0"></div>
<div class="field"><label for="image-category">Category</label><select id="image-category" disabled title="The subfolders of the image directory (DEVUTIL_IMAGE_DIR)"><option value="">Any</option></select></div>
<div class="field"><label for="image-format">Format</label><select id="image-format"><option>webp</option><option>jpeg</option><option>png</option><option>avif</option></select></div>
<div class="field check"><input id="image-gray" type="checkbox"><label for="image-gray">Grayscale</label></div>
</div>
<div class="actions"><button type="button" id="image-shuffle" class="secondary" disabled data-needs-js>New random id</button></div>
<figure class="preview"><img id="image-preview" src="${preview}" width="640" height="360" alt="Random image preview" decoding="async"></figure>
${copyField('image-url', 'Image URL', `${b}${preview}`)}
<p class="status" id="image-status" role="status"></p>
</form></div>`;
  },
};
