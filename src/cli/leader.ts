/**
 * A client that follows the leader: it connects to the coordinator now leading (the one announced under
 * --ha-dir or in etcd, or the first of several --coordinator addresses that answers: a standby keeps its
 * control port closed), and `submit --wait` goes on waiting across a takeover by asking the new leader
 * for the job's state.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterClient, type JobOutcome, type JobSummary } from '../client/index.js';
import { ClinkError } from '../errors.js';
import { leaderSource } from '../ha/index.js';
import { isTerminalJobState } from '../protocol/index.js';
import type { CoordinatorTarget } from './endpoint.js';
import { loadTls } from './tls-flags.js';

/** How long a client looks for a new leader after losing its coordinator. */
export const LEADER_WAIT_MS = 60_000;

/** Whether the target names more than one coordinator (so a lost one may have a successor). */
export function followsLeader(t: CoordinatorTarget): boolean {
  return t.haDir !== undefined || (t.etcdEndpoints?.length ?? 0) > 0 || t.endpoints.length > 1;
}

/** Connect to the coordinator that leads; keep trying for `waitMs` (0: one round). */
export async function connectToLeader(t: CoordinatorTarget, waitMs = 0): Promise<ClusterClient> {
  const source = leaderSource(t);
  const tls = t.tls ? (await loadTls(t.tls)).client : undefined;
  const options = { ...(tls ? { tls } : {}), ...(t.handshakeTimeoutMs ? { timeoutMs: t.handshakeTimeoutMs } : {}) };
  const deadline = Date.now() + waitMs;
  try {
    for (let round = 0; ; round++) {
      let last: Error | undefined;
      if (source) {
        const l = await source.current();
        if (!l)
          last = new ClinkError(
            'CLINK_ERR_CONNECTOR',
            `no leader is announced in ${source.describe}: is a coordinator running there (clink node --role=coordinator with the same --ha-dir or --etcd-endpoints)?`,
          );
        else {
          try {
            return await ClusterClient.connect(l.host, l.port, options);
          } catch (err) {
            last = err as Error;
          }
        }
      } else {
        for (const e of t.endpoints) {
          try {
            return await ClusterClient.connect(e.host, e.port, options);
          } catch (err) {
            last = err as Error;
          }
        }
        if (t.endpoints.length > 1)
          last = new ClinkError(
            'CLINK_ERR_CONNECTOR',
            `none of the coordinators ${t.endpoints.map((e) => `${e.host}:${e.port}`).join(', ')} answered: ${last!.message}`,
          );
      }
      if (Date.now() >= deadline) throw last!;
      await sleep(Math.min(1_000, 100 * 2 ** Math.min(round, 4)));
    }
  } finally {
    source?.close();
  }
}

/**
 * The coordinator was lost while waiting for job `jobId`: find the new leader and ask it for the job's
 * state until it ends. Results gathered by collect() are not carried across a takeover.
 */
export async function followJob(t: CoordinatorTarget, jobId: string, lost: string): Promise<JobOutcome> {
  process.stderr.write(`${lost}; following the new leader for job ${jobId}\n`);
  for (;;) {
    const client = await connectToLeader(t, LEADER_WAIT_MS);
    // A new leader takes jobs over once worker registrations settle: it may not list this one at once.
    const knownBy = Date.now() + LEADER_WAIT_MS;
    try {
      for (;;) {
        const job: JobSummary | undefined = (await client.listJobs(true)).find((j) => j.jobId === jobId);
        if (!job && Date.now() < knownBy) {
          await sleep(500);
          continue;
        }
        if (!job)
          throw new ClinkError(
            'CLINK_ERR_NOT_FOUND',
            `the new leader does not know job ${jobId} after ${LEADER_WAIT_MS / 1000} s: it was not taken over (see the leader's log)`,
          );
        if (isTerminalJobState(job.state))
          return {
            jobId,
            ok: job.state === 'FINISHED',
            state: job.state,
            error: job.error,
            durationMs: Date.now() - job.startedAtMs,
            collected: {},
          };
        await sleep(500);
      }
    } catch (err) {
      if (err instanceof ClinkError && err.code === 'CLINK_ERR_NOT_FOUND') throw err;
      // Lost this one too: look for the next leader.
    } finally {
      client.close();
    }
  }
}
