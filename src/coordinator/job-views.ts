/**
 * The API's projections: a job as GET /api/v1/jobs/:id and ListJobs show it, a worker as
 * GET /api/v1/workers does, and the channel counts of a placement.
 */
import { networkEdges, subtaskKey, taskOf, type PhysicalPlan } from '../plan/index.js';
import type { MessageOf } from '../protocol/index.js';
import { freeSlots, type JobState, type JobView, type WorkerSession, type WorkerView } from './job-state.js';
import type { DepartedSession } from './worker-registry.js';

export function jobView(j: JobState, now: number): JobView {
  const progress = [...j.progress.values()];
  const finishedIn = j.subtasks
    .filter((t) => t.finished && taskOf(j.plan, t.taskId).inputs.length === 0)
    .reduce((n, t) => n + t.recordsIn, 0);
  const finishedOut = j.subtasks
    .filter((t) => t.finished && taskOf(j.plan, t.taskId).outputs.length === 0)
    .reduce((n, t) => n + t.recordsOut, 0);
  const done = j.finishedAt !== undefined;
  const ck = j.checkpointing;
  return {
    jobId: j.id,
    name: j.name,
    state: j.state,
    startedAt: j.startedAt,
    ...(j.runningAt !== undefined ? { runningAt: j.runningAt } : {}),
    ...(j.finishedAt !== undefined ? { finishedAt: j.finishedAt } : {}),
    durationMs: (j.finishedAt ?? now) - j.startedAt,
    ...(j.error !== undefined ? { error: j.error } : {}),
    parallelism: j.spec.defaultParallelism,
    sourceRecords: done
      ? finishedIn
      : Math.max(
          finishedIn,
          progress.reduce((n, p) => n + p.sourceRecords, 0),
        ),
    sinkRecords: done
      ? finishedOut
      : Math.max(
          finishedOut,
          progress.reduce((n, p) => n + p.sinkRecords, 0),
        ),
    edges: j.edges,
    subtasks: j.subtasks.map((t) => ({
      taskId: t.taskId,
      index: t.index,
      workerId: t.session.id,
      attempt: t.attempt,
      finished: t.finished,
      ...(t.error ? { error: t.error } : {}),
    })),
    restarts: j.restarts,
    rescales: j.rescales,
    ...(j.autoscale
      ? { autoscaler: { min: j.autoscale.policy.min, max: j.autoscale.policy.max, decisions: j.autoscale.decisions } }
      : {}),
    retries: j.retries,
    guarantee: j.guarantee,
    checkpointsCompleted: ck.history.completed,
    lastCheckpointId: ck.history.lastId,
    commits: { confirmedThrough: ck.commits.confirmedThrough, owed: ck.commits.owedCheckpoints },
    ...(ck.history.lastAborted ? { lastCheckpointFailure: ck.history.lastAborted } : {}),
  };
}

/** A live worker session; `lastEnded` is how its previous session (if any) ended, `subtasks` what runs on it. */
export function workerView(
  s: WorkerSession,
  now: number,
  lastEnded: DepartedSession | undefined,
  subtasks: string[],
): WorkerView {
  return {
    workerId: s.id,
    session: s.session,
    slotsTotal: s.slots,
    slotsFree: freeSlots(s),
    slotsUsed: s.slotShares.size,
    address: s.conn.peer,
    dataHost: s.dataHost,
    httpPort: s.httpPort,
    runtime: s.runtime,
    protocolVersion: s.protocolVersion,
    registeredAt: s.registeredAt,
    lastSeenMsAgo: now - s.lastSeen,
    subtasks,
    lastEnded: lastEnded ?? null,
  };
}

/**
 * Count a placed job's channels: a forward edge joins subtask i to subtask i, any other edge every
 * upstream subtask to every downstream one. A channel is local when both ends share a worker.
 */
export function countChannels(
  plan: PhysicalPlan,
  placement: ReadonlyMap<string, readonly { taskId: string; index: number }[]>,
): { local: number; socket: number } {
  const workerOf = new Map<string, string>();
  for (const [worker, sts] of placement) for (const st of sts) workerOf.set(subtaskKey(st.taskId, st.index), worker);
  const total = { local: 0, socket: 0 };
  for (const e of networkEdges(plan)) {
    const c = edgeChannels(e, workerOf);
    total.local += c.local;
    total.socket += c.socket;
  }
  return total;
}

/** One network edge's channels whose two ends have a worker in `workerOf` (subtask key -> worker id): local or over a socket. */
export function edgeChannels(
  { edge, up, down }: ReturnType<typeof networkEdges>[number],
  workerOf: ReadonlyMap<string, string>,
): { local: number; socket: number } {
  const channels = { local: 0, socket: 0 };
  for (let u = 0; u < up.parallelism; u++) {
    for (let d = 0; d < down.parallelism; d++) {
      if (edge.kind === 'FORWARD' && u !== d) continue;
      const a = workerOf.get(subtaskKey(up.id, u));
      const b = workerOf.get(subtaskKey(down.id, d));
      if (a === undefined || b === undefined) continue;
      if (a === b) channels.local++;
      else channels.socket++;
    }
  }
  return channels;
}

export function toSummary(v: JobView): MessageOf<'ListJobsReply'>['jobs'][number] {
  return {
    jobId: v.jobId,
    name: v.name,
    state: v.state,
    startedAtMs: v.startedAt,
    completed: v.finishedAt !== undefined,
    error: v.error ?? '',
    sourceRecords: v.sourceRecords,
    sinkRecords: v.sinkRecords,
    parallelism: v.parallelism,
    checkpointsCompleted: v.checkpointsCompleted,
    lastCheckpointId: v.lastCheckpointId,
    restarts: v.restarts.length,
    lastRestartCause: v.restarts.at(-1)?.cause ?? '',
    retries: v.retries.length,
  };
}
