/**
 * A hot rescale on a worker (docs/design/016-rescale.md, "Hot cutover"): the job's changed tasks C are
 * replaced while their neighbours run on. BeginRescale arms every subtask of C, of the tasks feeding C
 * (U) and of those C feeds (D) to wait at a gate after the cutover checkpoint's barrier. CutoverRebind
 * retires the old C subtasks (after that checkpoint's commit, which came first) and gives each D subtask
 * input channels for the new C subtasks, numbered after its old ones. CutoverPeerUpdate points U's edges
 * into C at the new subtasks (partitioned over their number), ends its channels to the old ones, and
 * lets every armed subtask go on. Unarmed tasks never stop.
 */
import { END, channelTarget } from '../runtime/index.js';
import {
  createPhysicalPlan,
  inputChannels,
  networkEdges,
  type JobGraphSpec,
  type PhysicalPlan,
} from '../plan/index.js';
import type { MessageOf } from '../protocol/index.js';
import type { WorkerJob } from './deployed-job.js';

/** The rescale armed on this worker's part of a job. */
export interface ArmedCutover {
  rescaleId: number;
  checkpointId: number;
  /** The job's plan after the rescale. */
  plan: PhysicalPlan;
  /** Tasks whose parallelism changes (C). */
  changed: ReadonlySet<string>;
}

/**
 * The cutover of `BeginRescale`: the plan it leads to and the tasks it replaces. The coordinator names
 * those: after an earlier cutover a deploy's own plan is no longer the running one.
 */
export function cutoverOf(m: MessageOf<'BeginRescale'>): ArmedCutover {
  const plan = createPhysicalPlan(JSON.parse(m.specJson) as JobGraphSpec);
  return { rescaleId: m.rescaleId, checkpointId: m.cutoverCheckpointId, plan, changed: new Set(m.tasks) };
}

/** Whether task `taskId` takes part: it is replaced, feeds a replaced task or is fed by one. */
function involved(c: ArmedCutover, plan: PhysicalPlan, taskId: string): boolean {
  if (c.changed.has(taskId)) return true;
  return networkEdges(plan).some(
    ({ up, down }) => (up.id === taskId && c.changed.has(down.id)) || (down.id === taskId && c.changed.has(up.id)),
  );
}

/** Arm the subtasks of `job` that take part; returns how many, or why it cannot (a subtask not running). */
export function armCutover(job: WorkerJob, c: ArmedCutover): number | string {
  const armed = job.subtasks.filter((st) => involved(c, job.plan, st.task.id));
  const idle = armed.find((st) => !st.runner || st.done);
  if (idle) return `subtask ${idle.task.id}#${idle.index} is not running`;
  for (const st of armed) st.runner!.cutover.arm(c.checkpointId);
  return armed.length;
}

/**
 * Retire the old subtasks of C here (they end quietly) and give each D subtask its channels from the new
 * C subtasks. Every armed subtask must be at its gate. Resolves with how many subtasks were rebound.
 */
export async function rebindCutover(job: WorkerJob, c: ArmedCutover): Promise<number> {
  const waiting = job.subtasks.filter((st) => involved(c, job.plan, st.task.id));
  const away = waiting.find((st) => !st.runner?.cutover.holding);
  if (away)
    throw new Error(
      `subtask ${away.task.id}#${away.index} has not reached the cutover checkpoint ${c.checkpointId}'s gate`,
    );
  const retiring = waiting.filter((st) => c.changed.has(st.task.id));
  const ended = retiring.map((st) => job.retire(st));
  let rebound = 0;
  for (const st of waiting) {
    if (c.changed.has(st.task.id)) continue;
    // Its channels in the next plan from a replaced task: the old ones end as those subtasks retire.
    const task = c.plan.tasks.find((t) => t.id === st.task.id)!;
    const fresh = inputChannels(c.plan, task).filter((ch) => c.changed.has(edgeSource(c.plan, ch.edgeIndex)));
    if (fresh.length === 0) continue;
    // The old channels keep their numbers until their END; the new subtasks' (same edge, maybe the same
    // index) must find the new ones.
    st.inputs.forEach((ch, i) => {
      if (c.changed.has(edgeSource(c.plan, ch.edgeIndex))) st.inputs[i] = { ...ch, edgeIndex: -1 };
    });
    for (const ch of fresh) st.inputs.push(ch);
    st.runner!.addInputChannels(fresh.map((ch) => ch.inputIndex));
    rebound++;
  }
  await Promise.all(ended);
  return rebound;
}

/** The task an edge of `plan` comes from ('' for a channel an earlier rescale retired). */
function edgeSource(plan: PhysicalPlan, edgeIndex: number): string {
  return networkEdges(plan).find((e) => e.edgeIndex === edgeIndex)?.up.id ?? '';
}

/**
 * Point each U subtask's edges into C at the new subtasks (`update` gives those in other processes),
 * end its channels to the old ones, and let every armed subtask go on. With nothing rebound (a rescale
 * given up before its checkpoint completed) it only lets them go on.
 */
export function releaseCutover(
  job: WorkerJob,
  c: ArmedCutover,
  update: MessageOf<'CutoverPeerUpdate'> | undefined,
): number {
  let released = 0;
  for (const st of job.subtasks) {
    const runner = st.runner;
    if (!runner || st.done || !involved(c, job.plan, st.task.id)) continue;
    if (update && runner.cutover.holding) {
      const peers = update.subtasks.find((p) => p.taskId === st.task.id && p.subtaskIndex === st.index)?.peers ?? [];
      for (const { edgeIndex, down } of networkEdges(c.plan)) {
        if (!c.changed.has(down.id) || edgeSource(c.plan, edgeIndex) !== st.task.id || c.changed.has(st.task.id))
          continue;
        const channel = inputChannels(c.plan, down).findIndex(
          (ch) => ch.edgeIndex === edgeIndex && ch.upstreamSubtask === st.index,
        );
        const targets = Array.from({ length: down.parallelism }, (_, d) =>
          channelTarget(job.sinkTo(st, c.plan, peers, edgeIndex, d), channel, edgeIndex, st.index),
        );
        for (const old of runner.setup.writer.retarget(edgeIndex, targets))
          old.queue.push({ kind: END, channel: old.channel });
      }
    }
    runner.cutover.release('resume');
    released++;
  }
  return released;
}
