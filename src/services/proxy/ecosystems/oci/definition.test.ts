// The registry address clients are told (home page set-up lines, the token realm): the proxy's own
// host when it has one, else the base host; http instances get the insecure settings.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SetupInput } from '../define.ts';
import { ociEcosystem, registryOrigin } from './definition.ts';

const input = (base: string, proxy: string, secret = ''): SetupInput =>
  ({ urls: { base, proxy }, config: { proxy: { secret } }, proxy }) as unknown as SetupInput;

describe('oci set-up lines', () => {
  it('use the proxy host when it has one, else the base host', () => {
    assert.deepEqual(registryOrigin({ base: 'https://dev.example', proxy: 'https://proxy.example' }), {
      host: 'proxy.example',
      origin: 'https://proxy.example',
    });
    assert.deepEqual(
      registryOrigin({ base: 'http://127.0.0.1:8080', proxy: 'http://127.0.0.1:8080/proxy' }),
      {
        host: '127.0.0.1:8080',
        origin: 'http://127.0.0.1:8080',
      },
    );
  });

  it('show daemon.json, hosts.toml and registries.conf with this instance, insecure only over http', () => {
    const tls = ociEcosystem
      .setup(input('https://dev.example', 'https://proxy.example'))
      .map((l) => l.text)
      .join('\n');
    assert.match(tls, /"registry-mirrors": \["https:\/\/proxy\.example"\]/);
    assert.match(tls, /\[host\."https:\/\/proxy\.example"\]/);
    assert.match(tls, /location = "proxy\.example"/);
    assert.match(tls, /docker pull proxy\.example\/docker\.io\/library\/alpine/);
    assert.doesNotMatch(tls, /insecure/);
    const plain = ociEcosystem
      .setup(input('http://h:8080', 'http://h:8080/proxy'))
      .map((l) => l.text)
      .join('\n');
    assert.match(plain, /"insecure-registries": \["h:8080"\]/);
    assert.match(plain, /insecure = true/);
  });

  it('tell a private mirror to log in with the placeholder, never the secret', () => {
    const lines = ociEcosystem.setup(input('https://d.example', 'https://d.example/proxy', 'real-secret-1'));
    const text = lines.map((l) => l.text).join('\n');
    assert.match(text, /docker login d\.example -u any --password-stdin/);
    assert.doesNotMatch(text, /real-secret-1/);
  });
});
