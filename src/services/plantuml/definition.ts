// The PlantUML server utility's definition (see ../define.ts).

import { defineService } from '../define.ts';
import { plantumlSection } from './config.ts';
import { plantumlDashboard } from './dashboard.ts';
import { plantumlPage } from './page.ts';

export default defineService({
  name: 'plantuml',
  config: plantumlSection,
  plugin: () => import('./index.ts'),
  host: { mount: '/plantuml', label: 'PlantUML' },
  page: plantumlPage,
  dashboard: plantumlDashboard,
  prelaunch: async ({ config, dataDir, logger }): Promise<unknown> => {
    if (!config.plantuml.prestart) return undefined;
    const { prelaunch } = await import('./engine.ts');
    return prelaunch(config.plantuml, dataDir, logger.child({ svc: 'plantuml' }));
  },
});
