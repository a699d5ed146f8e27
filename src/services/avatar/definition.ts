// The Gravatar-compatible avatars utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { avatarSection } from './config.ts';

export default defineService({
  name: 'avatar',
  config: avatarSection,
  plugin: () => import('./index.ts'),
  host: { mount: '/avatar', urlsCarryMount: true, label: 'Avatars' },
  page: async () => (await import('./page.ts')).avatarPage,
  dashboard: async (ctx) => (await import('./dashboard.ts')).avatarDashboard(ctx),
});
