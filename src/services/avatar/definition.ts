// The Gravatar-compatible avatars utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { avatarSection } from './config.ts';
import { avatarDashboard } from './dashboard.ts';
import { avatarPage } from './page.ts';

export default defineService({
  name: 'avatar',
  config: avatarSection,
  plugin: () => import('./index.ts'),
  host: { mount: '/avatar', urlsCarryMount: true, label: 'Avatars' },
  page: avatarPage,
  dashboard: avatarDashboard,
});
