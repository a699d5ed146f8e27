// Real Syncthing instances for the relay interop test (docs/protocols/syncthing-relay.md §14): config.xml
// written before the first start so the relay URI is the only listen address and the only way to reach the
// peer (no discovery, NAT, STUN, pool relays or usage reporting), loopback GUI, one process per instance
// (STMONITORED=yes), killed by process group.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deviceIdOf, formatDeviceId } from '../../src/services/relay/protocol/device-id.ts';
import { freePort } from '../helpers/ports.ts';

export interface Peer {
  name: string;
  home: string;
  folder: string;
  deviceId: string;
  guiPort: number;
  apiKey: string;
  proc: ChildProcess | null;
  /** The last lines Syncthing printed, for failure messages. */
  log: string[];
}

export async function preparePeer(root: string, name: string): Promise<Peer> {
  const home = join(root, name, 'home');
  const folder = join(root, name, 'folder');
  mkdirSync(join(folder, '.stfolder'), { recursive: true });
  execFileSync('syncthing', ['generate', `--home=${home}`, '--no-default-folder', '--skip-port-probing'], {
    stdio: 'ignore',
    timeout: 30_000,
  });
  const der = new X509Certificate(readFileSync(join(home, 'cert.pem'))).raw;
  return {
    name,
    home,
    folder,
    deviceId: formatDeviceId(deviceIdOf(der)),
    guiPort: await freePort(),
    apiKey: randomBytes(16).toString('hex'),
    proc: null,
    log: [],
  };
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/** config.xml for `self` sharing folder `relaytest` with `peer`, reachable only via `relayUri`. */
export function writeConfig(self: Peer, peer: Peer, relayUri: string): void {
  const device = (p: Peer, address: string) => `
    <device id="${p.deviceId}" name="${p.name}" compression="metadata" introducer="false">
        <address>${esc(address)}</address>
        <paused>false</paused>
        <autoAcceptFolders>false</autoAcceptFolders>
    </device>`;
  const xml = `<configuration version="36">
    <folder id="relaytest" label="relaytest" path="${esc(self.folder)}" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="false" ignorePerms="false" autoNormalize="true">
        <filesystemType>basic</filesystemType>
        <device id="${self.deviceId}"></device>
        <device id="${peer.deviceId}"></device>
        <minDiskFree unit="%">0</minDiskFree>
    </folder>${device(self, 'dynamic')}${device(peer, relayUri)}
    <gui enabled="true" tls="false" debugging="false">
        <address>127.0.0.1:${self.guiPort}</address>
        <apikey>${self.apiKey}</apikey>
    </gui>
    <options>
        <listenAddress>${esc(relayUri)}</listenAddress>
        <globalAnnounceServer></globalAnnounceServer>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>true</relaysEnabled>
        <relayReconnectIntervalM>1</relayReconnectIntervalM>
        <reconnectionIntervalS>2</reconnectionIntervalS>
        <natEnabled>false</natEnabled>
        <urAccepted>-1</urAccepted>
        <urSeen>3</urSeen>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <startBrowser>false</startBrowser>
        <crashReportingEnabled>false</crashReportingEnabled>
        <stunKeepaliveStartS>0</stunKeepaliveStartS>
        <stunServer></stunServer>
        <announceLANAddresses>false</announceLANAddresses>
        <setLowPriority>false</setLowPriority>
        <minHomeDiskFree unit="%">0</minHomeDiskFree>
    </options>
</configuration>
`;
  writeFileSync(join(self.home, 'config.xml'), xml);
}

export function startPeer(p: Peer): void {
  const proc = spawn(
    'syncthing',
    ['serve', `--home=${p.home}`, '--no-browser', '--no-restart', '--no-upgrade'],
    {
      detached: true, // own process group: the after hook kills it and anything it forked
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        STMONITORED: 'yes',
        STNOUPGRADE: '1',
        STNODEFAULTFOLDER: '1',
        all_proxy: '',
        HTTPS_PROXY: '',
      },
    },
  );
  const keep = (chunk: Buffer) => {
    p.log.push(...String(chunk).split('\n').filter(Boolean));
    if (p.log.length > 60) p.log.splice(0, p.log.length - 60);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  p.proc = proc;
}

export async function stopPeer(p: Peer): Promise<void> {
  const proc = p.proc;
  if (!proc?.pid || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  try {
    process.kill(-proc.pid, 'SIGTERM');
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-(proc.pid as number), 'SIGKILL');
    } catch {
      /* already gone */
    }
  }, 5000);
  await exited;
  clearTimeout(timer);
}

/** GET on the peer's REST API (loopback GUI, API key). */
export async function rest<T>(p: Peer, path: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${p.guiPort}${path}`, {
    headers: { 'X-API-Key': p.apiKey },
    signal: AbortSignal.timeout(5000),
  });
  if (!res.ok) throw new Error(`${p.name} ${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}
