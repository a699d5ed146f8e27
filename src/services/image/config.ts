// Random image section: sources, output limits, caches and the sharp work pool. Every limit is
// config with a default (imgproxy's rule); env names are DEVUTIL_IMAGE_<KEY>.
import { availableParallelism } from 'node:os';
import { bool, bytes, duration, int, list, oneOf, rate, str } from '../../infra/config/schema.ts';

const SOURCES = ['dir', 'upstream', 'generator'];

export const imageSection = {
  enabled: bool(true, { doc: 'serve /rest/api/v1/image' }),
  rateLimit: rate('120/min', { doc: 'image requests per client IP' }),
  sources: list(['dir', 'upstream', 'generator'], {
    item: (s) => (SOURCES.includes(s) ? null : `expected one of ${SOURCES.join(', ')}`),
    doc: 'image sources in order of preference; a failing source falls through to the next',
  }),
  dir: str('', { doc: 'directory of source images (the operator collection); empty = none' }),
  dirRescanSec: duration(60, {
    unit: 's',
    min: 0,
    doc: 'periodic rescan of the directory besides change events (0 = only events)',
  }),
  upstreamUrl: str('', {
    pattern: /^https?:\/\/[^\s{}]+\/.*\{id\}/,
    hint: 'an http(s) URL template with {id} (and optionally {width}, {height})',
    doc: 'upstream origin, e.g. https://picsum.photos/seed/{id}/{width}/{height}; empty = none',
  }),
  upstreamHosts: list([], {
    doc: 'hosts the upstream may be fetched from (redirects included); default: the template host only',
  }),
  upstreamWidth: int(2400, { min: 1, max: 8192, doc: 'source width asked of the upstream ({width})' }),
  upstreamHeight: int(1600, { min: 1, max: 8192, doc: 'source height asked of the upstream ({height})' }),
  upstreamTimeoutMs: duration(10_000, { unit: 'ms', min: 100, doc: 'whole upstream fetch timeout' }),
  randomPool: int(1000, {
    min: 1,
    max: 1_000_000,
    doc: 'random requests pick among this many ids for the upstream and generator sources (cacheable)',
  }),
  defaultWidth: int(1920, { min: 1, max: 16384, doc: 'width when neither width nor height is given' }),
  defaultHeight: int(1080, { min: 1, max: 16384, doc: 'height when neither width nor height is given' }),
  maxWidth: int(4096, { min: 1, max: 16384, doc: 'largest width a client may ask for' }),
  maxHeight: int(4096, { min: 1, max: 16384, doc: 'largest height a client may ask for' }),
  maxPixels: int(4096 * 3072, { min: 1, doc: 'largest output pixel count (width x height)' }),
  maxSourcePixels: int(60_000_000, {
    min: 1,
    doc: 'largest source image in pixels (decompression-bomb guard, sharp limitInputPixels)',
  }),
  maxSourceBytes: bytes(32 * 1024 * 1024, { min: 1024, doc: 'largest source file or upstream body' }),
  crop: oneOf('attention', ['attention', 'entropy', 'centre'] as const, {
    doc: 'crop strategy when both width and height are given',
  }),
  quality: int(80, { min: 1, max: 100, doc: 'WebP/JPEG/AVIF quality' }),
  concurrency: int(Math.max(1, availableParallelism()), {
    min: 1,
    max: 256,
    doc: 'image operations run at once (sharp/libvips)',
    shownDefault: 'one per core',
  }),
  queueLength: int(32, { min: 0, doc: 'operations waiting for a slot; beyond that requests get 503' }),
  clientShare: int(50, {
    min: 1,
    max: 100,
    doc: 'percent of the image slots and of the queue one client (IPv6: its /64) may hold; 100 = no cap',
  }),
  retryAfterSec: duration(2, {
    unit: 's',
    min: 1,
    doc: 'Retry-After sent with 503 when the pool is saturated',
  }),
  cacheMemoryBytes: bytes(64 * 1024 * 1024, { doc: 'in-memory LRU of processed images (0 = off)' }),
  cacheDiskBytes: bytes(1024 * 1024 * 1024, {
    doc: 'on-disk cache of processed images and upstream sources under the data dir (0 = off)',
  }),
  maxAgeSec: duration(86_400, { unit: 's', min: 0, doc: 'Cache-Control max-age for responses with an id' }),
};
