// What a utility's section of the home page is (services/<name>/page.ts) and what it is rendered
// from. The web utility puts the sections of every definition in one document (services/web/page.ts).
import type { Config } from '../config.ts';
import type { PublicUrls } from '../context.ts';
import type { ServiceDef } from '../services/define.ts';
import type { Raw } from './html.ts';

/** A utility's section of the home page. */
export interface PageSection {
  /** Label in the page's navigation. */
  readonly nav: string;
  /** Heading of the section. */
  readonly title: string;
  /** One sentence under the heading. */
  readonly lead: string | ((p: PageInput) => string);
  /** Examples and the try-it tool, shown when the utility is enabled on this server. */
  body(p: PageInput): Raw;
  /** Other origins the section's script reads from (added to the page's CSP connect-src). */
  connect?(p: PageInput): string[];
}

export interface PageInput {
  urls: PublicUrls;
  config: Config;
  /** Every definition of this server; those with a page get a section, those with a host a URL line. */
  services: readonly ServiceDef[];
  /** Names of the utilities this server serves. */
  enabled: ReadonlySet<string>;
  clientIp: string;
  version: string;
  /** Public paths of the hashed assets; null when they could not be built (the page still reads). */
  assets: { js: string; css: string; icon: string } | null;
}
