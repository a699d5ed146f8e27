// sharp (libvips), loaded on the first image or avatar that needs pixels instead of at start-up:
// opening its native library costs 0.05-0.2 s before the server could listen. If it cannot be
// loaded (a missing or broken native build), those requests answer 503 saying so while everything
// else keeps serving; the failure is kept, as a restart is what fixes it.
import type Sharp from 'sharp';
import { unavailable } from '../http/errors.ts';

export type SharpFn = typeof Sharp;

let loading: Promise<SharpFn> | undefined;

export function loadSharp(): Promise<SharpFn> {
  loading ??= import('sharp').then(
    (m) => m.default,
    (err: unknown) => {
      throw unavailable('image processing is unavailable on this server', undefined, 'SHARP_UNAVAILABLE', {
        cause: err,
      });
    },
  );
  return loading;
}
