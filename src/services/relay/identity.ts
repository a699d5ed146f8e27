// The relay's persistent identity: cert.pem/key.pem under <dataDir>/relay (created on first start,
// key mode 0600), so the device ID in the relay URI survives restarts.
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deviceIdOf, formatDeviceId } from './protocol/device-id.ts';
import { generateIdentity, type Identity } from './x509.ts';

export interface RelayIdentity extends Identity {
  /** Text device ID, e.g. P56IOI7-MZJNU2Y-... */
  deviceId: string;
  created: boolean;
}

export function identityPaths(dataDir: string): { dir: string; cert: string; key: string } {
  const dir = join(dataDir, 'relay');
  return { dir, cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
}

/** Reads the stored identity, or null when there is none yet. */
export function readIdentity(dataDir: string): RelayIdentity | null {
  const p = identityPaths(dataDir);
  if (!existsSync(p.cert) || !existsSync(p.key)) return null;
  const certPem = readFileSync(p.cert, 'utf8');
  const certDer = new X509Certificate(certPem).raw;
  return {
    certPem,
    keyPem: readFileSync(p.key, 'utf8'),
    certDer,
    deviceId: formatDeviceId(deviceIdOf(certDer)),
    created: false,
  };
}

export function loadOrCreateIdentity(dataDir: string): RelayIdentity {
  const existing = readIdentity(dataDir);
  if (existing) return existing;
  const p = identityPaths(dataDir);
  mkdirSync(p.dir, { recursive: true, mode: 0o700 });
  const id = generateIdentity();
  // Write-then-rename so a crash never leaves half a key behind.
  writeFileSync(`${p.key}.tmp`, id.keyPem, { mode: 0o600 });
  writeFileSync(`${p.cert}.tmp`, id.certPem, { mode: 0o644 });
  renameSync(`${p.key}.tmp`, p.key);
  renameSync(`${p.cert}.tmp`, p.cert);
  return { ...id, deviceId: formatDeviceId(deviceIdOf(id.certDer)), created: true };
}
