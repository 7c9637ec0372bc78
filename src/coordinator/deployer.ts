/**
 * Deploying: charge a placement's slots, record its subtasks, send each worker its Deploy, and once
 * every subtask of the attempt reports its ports, tell each worker where its subtasks send their
 * output (PeerUpdate).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../log/index.js';
import { KeyGroupRange, networkEdges, type PhysicalPlan } from '../plan/index.js';
import { makeMessage, type Message, type MessageOf } from '../protocol/index.js';
import { jobDir, writeRestoredRecord, type CompletedMarker } from './checkpoint-storage.js';
import type { JobState, SubtaskState, WorkerSession } from './job-state.js';
import type { ModuleCache } from './module-cache.js';
import { slotOf, type PlacementPlan } from './placement.js';
import { checkRestore, type RestoreDecision } from './restore-gate.js';

export interface DeployerDeps {
  log: Logger;
  sessions: ReadonlyMap<string, WorkerSession>;
  modules: ModuleCache;
  post: (s: WorkerSession, m: Message, lane?: 'bulk') => void;
}

/** A deploy that continues a run writes `RESTORED`: what it restored, and the first id it numbers. */
export async function recordRestore(
  checkpointDir: string,
  jobId: string,
  restore: CompletedMarker,
  epoch = 0,
): Promise<void> {
  await writeRestoredRecord(
    jobDir(checkpointDir, jobId),
    { restoredFrom: restore.stateDir, checkpointId: restore.checkpointId, firstId: restore.checkpointId + 1 },
    epoch,
  );
}

export class Deployer {
  /** Each job's data secret per deploy attempt: kept here, out of the job state the API projects. */
  private readonly secrets = new WeakMap<JobState, Map<number, string>>();

  constructor(private readonly deps: DeployerDeps) {}

  /** The secret of `attempt` of `job`, made on first use: its data connections prove they know it. */
  private dataSecret(job: JobState, attempt: number): string {
    const byAttempt = this.secrets.get(job) ?? this.secrets.set(job, new Map()).get(job)!;
    return byAttempt.get(attempt) ?? byAttempt.set(attempt, randomBytes(32).toString('hex')).get(attempt)!;
  }

  /**
   * Charge the placement's slots and return the subtask records it makes (attempt `job.attempt`); the
   * job's master records them as the job's. Placing and charging happen with no await between, so the
   * slots placed are still free when charged.
   */
  charge(job: Pick<JobState, 'id' | 'attempt'>, placement: PlacementPlan): SubtaskState[] {
    const placed: SubtaskState[] = [];
    for (const [workerId, sts] of placement) {
      const s = this.deps.sessions.get(workerId)!;
      for (const st of sts) {
        const slot = slotOf(st);
        s.slotShares.set(`${job.id}/${slot}`, (s.slotShares.get(`${job.id}/${slot}`) ?? 0) + 1);
        placed.push({
          taskId: st.taskId,
          index: st.index,
          session: s,
          slot,
          attempt: job.attempt,
          finished: false,
          recordsIn: 0,
          recordsOut: 0,
        });
      }
    }
    return placed;
  }

  /** Send each worker of `placement` its Deploy, as attempt `job.attempt`, from `restore`. */
  send(job: JobState, placement: PlacementPlan, restore: CompletedMarker | undefined): void {
    const decision = restore ? this.logRestore(job, restore) : undefined;
    for (const [workerId, sts] of placement) {
      const s = this.deps.sessions.get(workerId)!;
      const tasks = sts.map((st) => deploymentTask(job.plan, st, job.attempt, restore, decision));
      this.deps.post(
        s,
        makeMessage('Deploy', {
          jobId: job.id,
          jobName: job.name,
          specJson: job.specJson,
          tasks,
          modules: [this.deps.modules.forDeploy(s, job.module)],
          checkpoint: restore ? { ...job.checkpoint, restoreFromDir: restore.stateDir } : job.checkpoint,
          params: job.params,
          buildParallelism: job.buildParallelism,
          dataSecret: this.dataSecret(job, job.attempt),
        }),
        'bulk',
      );
    }
  }

  /**
   * Every subtask of an attempt (`group`) has reported its ports: mark them started and tell each worker
   * where they send their output. Returns how many workers run the group.
   */
  connect(job: JobState, group: SubtaskState[], attempt: number): number {
    const bySession = new Map<WorkerSession, MessageOf<'PeerUpdate'>['subtasks']>();
    for (const st of group) {
      st.started = true;
      (bySession.get(st.session) ?? bySession.set(st.session, []).get(st.session)!).push({
        taskId: st.taskId,
        subtaskIndex: st.index,
        peers: peersOf(job, st),
      });
    }
    for (const [s, subtasks] of bySession)
      this.deps.post(s, makeMessage('PeerUpdate', { jobId: job.id, subtasks, attempt }));
    return bySession.size;
  }

  /** Say what a deploy restores (the gate passed at submit); returns which tasks' state it loads, and which rescaled. */
  private logRestore(job: JobState, restore: CompletedMarker): RestoreDecision {
    const log = this.deps.log;
    const d = checkRestore(restore, job.plan, job.name, job.checkpoint.allowNonRestoredState);
    const fields = { jobId: job.id, checkpointId: restore.checkpointId, attempt: job.attempt };
    log.info(
      fields,
      `restored job ${job.id} from ${restore.stateDir} (checkpoint ${restore.checkpointId}, ${d.restoredOperators} operators)`,
    );
    if (d.dropped.length > 0)
      log.warn(
        fields,
        `job ${job.id}: the state of operators ${d.dropped.join(', ')} in checkpoint ${restore.checkpointId} is dropped (--allow-non-restored-state): the job no longer has them`,
      );
    if (d.fresh.length > 0)
      log.info(
        fields,
        `job ${job.id}: tasks ${d.fresh.join(', ')} have no state in checkpoint ${restore.checkpointId} and start empty`,
      );
    for (const [task, from] of d.rescaled)
      log.info(
        fields,
        `job ${job.id}: task ${task} is restored at parallelism ${job.plan.tasks.find((t) => t.id === task)!.parallelism} from its ${from} subtasks in checkpoint ${restore.checkpointId}`,
      );
    if (d.graphChanged)
      log.info(
        fields,
        `job ${job.id}: its graph differs from checkpoint ${restore.checkpointId}'s (hash ${restore.identity?.graphHash.slice(0, 12)} -> ${d.graphHash.slice(0, 12)})`,
      );
    return d;
  }
}

/** How a Deploy names subtask `st` of `plan`: its key groups, attempt, and what it restores (per the restore gate's decision). */
export function deploymentTask(
  plan: PhysicalPlan,
  st: { taskId: string; index: number },
  attempt: number,
  restore: CompletedMarker | undefined,
  decision: RestoreDecision | undefined,
): MessageOf<'Deploy'>['tasks'][number] {
  const task = plan.tasks.find((t) => t.id === st.taskId)!;
  const range = KeyGroupRange.forSubtask(st.index, task.parallelism, plan.spec.maxParallelism);
  return {
    taskId: st.taskId,
    subtaskIndex: st.index,
    parallelism: task.parallelism,
    chainJson: JSON.stringify(task.operators.map((o) => o.id)),
    keyGroupStart: range.start,
    keyGroupEnd: range.end,
    restoreCheckpointId: restore && decision?.restoredTasks.has(st.taskId) ? restore.checkpointId : 0,
    attempt,
    restoreParallelism: decision?.rescaled.get(st.taskId) ?? 0,
  };
}

/** Where subtask `st` sends its output (optionally only to tasks `to`): each downstream subtask's host and port. */
export function peersOf(
  job: JobState,
  st: SubtaskState,
  to?: ReadonlySet<string>,
): MessageOf<'PeerUpdate'>['subtasks'][number]['peers'] {
  const peers: MessageOf<'PeerUpdate'>['subtasks'][number]['peers'] = [];
  for (const { edge, up, down } of networkEdges(job.plan)) {
    if (up.id !== st.taskId || (to && !to.has(down.id))) continue;
    for (let d = 0; d < down.parallelism; d++) {
      const target = job.subtasks.find((t) => t.taskId === down.id && t.index === d)!;
      const port = target.listening!.find(
        (p) => p.upstreamTaskId === up.id && p.upstreamSubtask === st.index && p.inputIndex === edge.inputIndex,
      )?.port;
      if (port === undefined) continue;
      peers.push({
        downstreamTaskId: down.id,
        downstreamSubtask: d,
        inputIndex: edge.inputIndex,
        host: target.session.dataHost,
        port,
        link: target.dataLinks === true,
      });
    }
  }
  return peers;
}
