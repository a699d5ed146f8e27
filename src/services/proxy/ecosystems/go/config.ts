// Go modules mount settings (DEVUTIL_PROXY_GO_*).
import { list } from '../../../../infra/config/schema.ts';
import { httpsUrl } from '../fields.ts';

const HOST = /^[a-z0-9-]+(\.[a-z0-9-]+)+$/;

export const goFields = {
  goProxy: httpsUrl('https://proxy.golang.org', 'upstream module proxy of the go mount'),
  goSumdb: list(['sum.golang.org'], {
    item: (s) => (HOST.test(s) ? null : 'expected a host name'),
    doc: 'checksum databases passed through at /proxy/go/sumdb/<name>/ (each reached at https://<name>)',
  }),
};
