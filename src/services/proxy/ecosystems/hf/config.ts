// Hugging Face mount settings (DEVUTIL_PROXY_HF_*).
import { httpsUrl } from '../fields.ts';

export const hfFields = {
  hfEndpoint: httpsUrl('https://huggingface.co', 'upstream Hub of the hf mount'),
};
