// The Avatars (Gravatar-compatible) section of the home page: examples built from the configured public URLs.
import { copyField, example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';
import { DICEBEAR_STYLES, DicebearMissing, dicebearVersion } from './gen/dicebear.ts';

/** The DiceBear styles installed here, for the picker (none on an install without them). */
function installedStyles(): string[] {
  return DICEBEAR_STYLES.filter((s) => {
    try {
      dicebearVersion(s);
      return true;
    } catch (err) {
      if (err instanceof DicebearMissing) return false;
      throw err;
    }
  });
}

export const avatarPage: PageSection = {
  nav: 'Avatars',
  title: 'Avatars',
  lead: 'Gravatar-compatible avatars: anything that builds a Gravatar URL (WordPress, GitLab, Gitea, Discourse) works by swapping the host; unknown addresses get a generated picture.',
  body(p) {
    const a = p.urls.avatar;
    const dicebear = installedStyles();
    return html`<div class="split"><div class="examples">
${example('Avatar URL (MD5 of the trimmed, lower-cased email, as other sites build it; SHA-256 works too)', `${a}/avatar/<hash>?s=80&d=identicon`)}
${example('Hash an email in a shell', `printf '%s' 'me@example.com' | md5sum      # or sha256sum`)}
${example('Gravatar base URL for Gitea, GitLab, Discourse…', `${a}/avatar/`)}
</div>
<form class="tool" id="avatar-form">
<p class="note">The hash is computed in your browser; the email address is never sent.</p>
<div class="grid2">
<div class="field"><label for="avatar-email">Email</label><input id="avatar-email" type="email" autocomplete="email" spellcheck="false" placeholder="you@example.com"></div>
<div class="field"><label for="avatar-d">Default picture</label><select id="avatar-d">${['identicon', 'retro', 'monsterid', 'wavatar', 'robohash', 'mp', 'initials', 'blank'].map((d) => html`<option>${d}</option>`)}${dicebear.length ? html`<optgroup label="DiceBear">${dicebear.map((d) => html`<option value="dicebear-${d}">${d}</option>`)}</optgroup>` : ''}</select></div>
</div>
<div class="avatars" id="avatar-previews" aria-live="polite"></div>
${copyField('avatar-url', 'Avatar URL')}
<p class="status" id="avatar-status" role="status"></p>
</form></div>`;
  },
};
