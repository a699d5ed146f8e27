// Avatar section. DEVUTIL_AVATAR_HOST gives it its own virtual host.
import { bool, str, url } from '../../infra/schema.ts';

export const avatarSection = {
  enabled: bool(true, { doc: 'serve Gravatar-compatible avatars under /avatar/' }),
  host: str('', { doc: 'Host header that routes every path to the avatar service' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public URL whose /avatar/<hash> serves avatars (default: http(s)://<host> or <public_url>)',
  }),
};
