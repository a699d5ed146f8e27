// systemd socket activation (sd_listen_fds(3)): the service manager opens the listening socket,
// keeps it across restarts of the service, and hands it to each process as fd 3 onwards, saying so
// with LISTEN_FDS (how many), LISTEN_PID (for which process) and LISTEN_FDNAMES (the unit's
// FileDescriptorName= of each). While one process stops and the next starts, connections wait in
// the socket's backlog instead of being refused or reset: a plain `systemctl restart` loses nothing
// (deploy/devutil.socket, docs/operations.md).

/** The first passed descriptor (SD_LISTEN_FDS_START). */
export const LISTEN_FDS_START = 3;
/**
 * Listening again on the passed socket sets its backlog: keep deploy/devutil.socket's Backlog=
 * (Node's default, 511, would shorten the queue that carries a restart; the kernel caps it at
 * net.core.somaxconn).
 */
export const ACTIVATED_BACKLOG = 4096;
/** The name deploy/devutil.socket gives the HTTP socket (FileDescriptorName=). */
export const HTTP_FD_NAME = 'http';

export interface ActivatedSocket {
  fd: number;
  /** Its FileDescriptorName=, when the manager said. */
  name: string | null;
}

export interface ProcessIds {
  pid: number;
  ppid: number;
  /** A cluster worker: its primary received the socket and listens on it for the workers. */
  worker: boolean;
}

/**
 * The HTTP socket passed to this process, or null when none was: LISTEN_PID must name this process
 * (a cluster worker: its primary, which holds the descriptor). With several descriptors the one
 * named "http" is taken, else the first.
 */
export function activatedSocket(
  env: Record<string, string | undefined>,
  ids: ProcessIds,
): ActivatedSocket | null {
  const count = Number(env['LISTEN_FDS']);
  if (!Number.isSafeInteger(count) || count < 1) return null;
  const owner = Number(env['LISTEN_PID']);
  if (owner !== (ids.worker ? ids.ppid : ids.pid)) return null;
  const names = (env['LISTEN_FDNAMES'] ?? '').split(':');
  const named = names.slice(0, count).indexOf(HTTP_FD_NAME);
  const index = named >= 0 ? named : 0;
  return { fd: LISTEN_FDS_START + index, name: names[index] || null };
}
