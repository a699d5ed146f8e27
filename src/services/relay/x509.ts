// A minimal self-signed X.509 v3 certificate writer (DER by hand, signed with node:crypto), so the
// relay and test clients get Syncthing-style identities without openssl or a dependency.
// Peers never verify a CA chain: they pin SHA-256(DER) (the device ID), so only well-formedness matters.
import { generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, content]);
}

const seq = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]) => tlv(0x31, Buffer.concat(parts));

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const out = [40 * a + b];
  for (const n of rest) {
    const chunk: number[] = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function integer(bytes: Buffer): Buffer {
  return tlv(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  // RFC 5280: UTCTime through 2049, GeneralizedTime from 2050.
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${iso}Z`));
}

const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn, 'utf8')))));

export interface Identity {
  certPem: string;
  keyPem: string;
  certDer: Buffer;
}

function pem(label: string, der: Buffer): string {
  const b64 = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${b64.join('\n')}\n-----END ${label}-----\n`;
}

/** ECDSA P-384 / SHA-384 like strelaysrv 1.19 and Syncthing 1.x, valid for 20 years. */
export function generateIdentity(commonName = 'syncthing'): Identity {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
  const sigAlg = seq(oid('1.2.840.10045.4.3.3')); // ecdsa-with-SHA384, no parameters
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01; // positive, non-zero
  const now = Date.now();
  const notBefore = new Date(now - 86_400_000);
  const notAfter = new Date(now + 20 * 365 * 86_400_000);
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const extensions = tlv(
    0xa3,
    seq(
      // keyUsage (critical): digitalSignature
      seq(oid('2.5.29.15'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, tlv(0x03, Buffer.from([0x07, 0x80])))),
      // extKeyUsage: serverAuth, clientAuth
      seq(oid('2.5.29.37'), tlv(0x04, seq(oid('1.3.6.1.5.5.7.3.1'), oid('1.3.6.1.5.5.7.3.2')))),
      // basicConstraints (critical): CA false
      seq(oid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, seq())),
    ),
  );
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    sigAlg,
    name(commonName),
    seq(time(notBefore), time(notAfter)),
    name(commonName),
    spki,
    extensions,
  );
  const signature = sign('sha384', tbs, privateKey as KeyObject);
  const certDer = seq(tbs, sigAlg, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  return {
    certDer,
    certPem: pem('CERTIFICATE', certDer),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}
