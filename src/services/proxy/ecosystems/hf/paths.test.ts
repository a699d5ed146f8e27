import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MountError } from '../mount-error.ts';
import { parseHubPath } from './paths.ts';

describe('Hugging Face mount paths', { timeout: 10_000 }, () => {
  it('reads model, dataset and space downloads', () => {
    assert.deepEqual(parseHubPath('/openai-community/gpt2/resolve/main/config.json'), {
      kind: 'file',
      repo: 'openai-community/gpt2',
      type: 'models',
      revision: 'main',
      path: 'config.json',
    });
    assert.deepEqual(parseHubPath('/gpt2/resolve/main/onnx/model.onnx'), {
      kind: 'file',
      repo: 'gpt2',
      type: 'models',
      revision: 'main',
      path: 'onnx/model.onnx',
    });
    const d = parseHubPath('/datasets/org/data/resolve/refs%2Fconvert%2Fparquet/default/train/0.parquet');
    assert.equal(d.kind === 'file' && d.type, 'datasets');
    assert.equal(d.kind === 'file' && d.revision, 'refs%2Fconvert%2Fparquet');
    assert.equal(parseHubPath('/spaces/org/app/raw/main/app.py').kind, 'file');
  });

  it('reads API paths and marks the Xet read token and paths-info', () => {
    assert.deepEqual(parseHubPath('/api/models/org/m/xet-read-token/main'), {
      kind: 'api',
      repo: 'org/m',
      type: 'models',
      xetToken: true,
      post: false,
    });
    const pi = parseHubPath('/api/datasets/org/d/paths-info/main');
    assert.equal(pi.kind === 'api' && pi.post, true);
    const legacy = parseHubPath('/api/models/gpt2/revision/main');
    assert.equal(legacy.kind === 'api' && legacy.repo, 'gpt2');
    assert.equal(parseHubPath('/api/models').kind, 'api');
    assert.equal(parseHubPath('/api/resolve-cache/models/org/m/abc/config.json').kind, 'resolve-cache');
  });

  const refused: [string, number][] = [
    ['/', 403],
    ['/login', 403],
    ['/org/model', 403],
    ['/org/model/tree/main', 403],
    ['/settings/tokens', 403],
    ['/api/whoami-v2', 403],
    ['/api/models/../../admin', 400],
    ['/org/../model/resolve/main/x', 400],
    ['/org/model/resolve/main/../../../etc/passwd', 400],
    ['/org/model/resolve/main/a/%2e%2e/b', 400],
    ['/org/model/resolve/main/a%2fb', 400],
    ['/org/model/resolve/main/a%5cb', 400],
    ['/org/model/resolve/../x', 400],
    ['/org/model/resolve/main', 404],
    ['/org/model/resolve/main/', 400],
    ['/api/models/org/m/tree/main/%2e%2e', 400],
  ];
  for (const [path, status] of refused)
    it(`refuses ${path} with ${status}`, () => {
      assert.throws(
        () => parseHubPath(path),
        (e: unknown) => e instanceof MountError && e.status === status,
      );
    });
});
