/**
 * Secure by default beyond loopback: a node whose ports are reachable from other machines starts only
 * with protection (TLS, or the cluster token), or when told `--insecure`, which it then says at every
 * start. On loopback nothing is asked: the laptop stays zero-config.
 */
import { isIP } from 'node:net';

/** Whether `host` is this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1' || host === '[::1]') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return /^::ffff:127\./i.test(host);
}

export interface Exposure {
  role: 'coordinator' | 'worker';
  /** The hosts it listens on or advertises, with the flag that set each. */
  hosts: { host: string; flag: string }[];
  tls: boolean;
  token: boolean;
  insecure: boolean;
}

/** Why the node may not start (one line), or undefined; `warning` when it starts exposed under --insecure. */
export function exposureVerdict(e: Exposure): { refusal?: string; warning?: string } {
  const open = e.hosts.filter((h) => h.host !== '' && !isLoopback(h.host));
  if (open.length === 0 || e.tls || e.token) return {};
  const where = open.map((h) => `${h.flag} ${h.host}`).join(', ');
  const what =
    e.role === 'coordinator'
      ? 'anyone who reaches its control port can submit a job, which is code that runs on every worker'
      : 'anyone who reaches its data port can feed its subtasks';
  const protect =
    e.role === 'coordinator'
      ? '--tls-cert and --tls-key (with --tls-client-ca for mTLS)'
      : '--tls-ca, --tls-cert and --tls-key';
  if (e.insecure) return { warning: `running without TLS or a token beyond loopback (${where}, --insecure): ${what}` };
  return {
    refusal: `${where} is reachable beyond this machine, and this ${e.role} has no protection: ${what}. Give it ${protect}, or set CLINK_AUTH_TOKEN, or pass --insecure to run it open`,
  };
}
