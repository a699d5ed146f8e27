// The Hugging Face profile: `HF_ENDPOINT={proxy_url}/hf`.
import { defineEcosystem, type SetupInput } from '../define.ts';

const endpoint = (p: SetupInput): string => `${p.proxy}/hf`;

export const hfEcosystem = defineEcosystem({
  name: 'hf',
  title: 'Hugging Face',
  summary:
    'huggingface_hub, transformers, datasets, the hf CLI and @huggingface/hub download models, datasets and spaces through this server, Xet-backed files included: the Hub, its LFS CDN and its Xet storage are all reached through here. The upstream Hub is DEVUTIL_PROXY_HF_ENDPOINT.',
  paths: ['/hf'],
  envelope: {
    contentType: 'application/json; charset=utf-8',
    // The Hub's error shape; huggingface_hub shows `error`.
    body: (_s, m) => JSON.stringify({ error: m }),
  },
  load: () => import('./index.ts'),
  setup: (p) => [
    { label: 'huggingface_hub, transformers, datasets, hf CLI', text: `export HF_ENDPOINT=${endpoint(p)}` },
    {
      label: '@huggingface/hub (JavaScript)',
      text: `await downloadFile({ repo: '<owner>/<model>', path: 'config.json', hubUrl: '${endpoint(p)}' })`,
    },
  ],
  script: { tool: 'hf', url: endpoint },
});
