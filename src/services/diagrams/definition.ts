// The diagrams utility's definition (see ../define.ts): plantuml-server's and Kroki's APIs. Its
// section was called plantuml (DEVUTIL_DIAGRAMS_*) until the utility grew past PlantUML.

import { defineService } from '../define.ts';
import { diagramsSection } from './config.ts';

export default defineService({
  name: 'diagrams',
  config: diagramsSection,
  formerly: 'plantuml',
  plugin: () => import('./index.ts'),
  host: { mount: '/plantuml', label: 'PlantUML' },
  page: async () => (await import('./page.ts')).diagramsPage,
  dashboard: async (ctx) => (await import('./dashboard.ts')).diagramsDashboard(ctx),
  prelaunch: async ({ config, dataDir, logger }): Promise<unknown> => {
    if (!config.diagrams.prestart) return undefined;
    const { prelaunch } = await import('./plantuml/engine.ts');
    return prelaunch(config.diagrams, dataDir, logger.child({ svc: 'diagrams' }));
  },
});
