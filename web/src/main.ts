// Entry point of the home page script: every tool enhances its server-rendered section, so the page
// reads fine without JavaScript and a missing section (utility disabled) is simply skipped. The admin
// page (/admin) uses the same script: its part finds its form and the others find nothing.
import { initAdmin } from './admin.ts';
import { initAvatar } from './avatar.ts';
import { initDiagram } from './diagram.ts';
import { enableJsControls, pageConfig, setupCopy } from './dom.ts';
import { initIp } from './ip.ts';
import { initRelay } from './relay.ts';
import { initTelegram } from './telegram.ts';
import { initImage, initProxy } from './tools.ts';
import { initUpload } from './upload.ts';

const cfg = pageConfig();
setupCopy();
initUpload(cfg);
initIp();
initImage(cfg);
initTelegram();
initProxy(cfg);
initDiagram(cfg);
initAvatar(cfg);
initRelay();
initAdmin();
enableJsControls();
