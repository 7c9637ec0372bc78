/**
 * The lint's checks on a node's command line, as `clink node` applies them at start and `clink lint`
 * reports them. Loaded when one of those runs, so no other command pays for the checks at start-up.
 */
import {
  coordinatorConfigFindings,
  lintError,
  roleFindings,
  workerConfigFindings,
  type Finding,
} from '../lint/index.js';
import { authTokenFromEnv } from '../util/index.js';
import { exposureVerdict } from './exposure.js';
import { nodeFlagsOf, type NodeRole } from './node-flag-table.js';
import { tlsFlagProblems, type TlsFlags, type TlsRole } from './tls-flags.js';

/**
 * Everything wrong with a node's command line for `role`: the refusals (incoherent TLS flags, an open
 * port without protection, etcd without an HA directory, a zero outbound bound), the liveness checks,
 * and flags the role ignores. `exposureWarning` is the --insecure warning, said at every start.
 */
export function nodeFindings(
  role: NodeRole,
  o: Record<string, unknown>,
  given: readonly { flag: string; role: NodeRole | 'both' }[],
): { findings: Finding[]; exposureWarning?: string } {
  const flags = nodeFlagsOf({ ...o, role });
  const findings: Finding[] = tlsFlagProblems(o as TlsFlags, role as TlsRole).map((m) => lintError('tls-flags', m));
  const exposure = exposureVerdict({
    role,
    hosts:
      role === 'coordinator'
        ? [
            { host: o.bindHost as string, flag: '--bind-host' },
            { host: (o.advertiseHost as string | undefined) ?? '', flag: '--advertise-host' },
          ]
        : [{ host: o.dataHost as string, flag: '--data-host' }],
    tls: role === 'coordinator' ? o.tlsCert !== undefined : o.tlsCa !== undefined,
    token: authTokenFromEnv() !== undefined,
    insecure: o.insecure === true,
  });
  if (exposure.refusal) findings.push(lintError('exposure', exposure.refusal));
  if (role === 'coordinator' && o.etcdEndpoints && !o.haDir) {
    findings.push(
      lintError(
        'etcd-without-ha-dir',
        '--etcd-endpoints needs --ha-dir too: the directory (shared by every coordinator) where running jobs are persisted for a successor',
      ),
    );
  }
  const c = flags.coordinator as Parameters<typeof coordinatorConfigFindings>[0];
  if (role === 'coordinator') findings.push(...coordinatorConfigFindings(c));
  else {
    const w = flags.worker;
    findings.push(
      ...workerConfigFindings(
        {
          heartbeatIntervalMs: w.heartbeatIntervalMs!,
          peerUpdateTimeoutMs: w.peerUpdateTimeoutMs!,
          coordinatorHeartbeatTimeoutMs: w.coordinatorHeartbeatTimeoutMs!,
          taskStallTimeoutMs: w.taskStallTimeoutMs!,
          batchLingerMs: w.batchLingerMs!,
          reconnectInitialBackoffMs: flags.reconnect!.initialBackoffMs!,
          reconnectMaxBackoffMs: flags.reconnect!.maxBackoffMs!,
        },
        c.heartbeatTimeoutMs,
      ),
    );
  }
  findings.push(
    ...roleFindings(
      role,
      given.filter((g): g is { flag: string; role: NodeRole } => g.role !== 'both'),
    ),
  );
  return { findings, ...(exposure.warning ? { exposureWarning: exposure.warning } : {}) };
}
