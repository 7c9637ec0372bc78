/**
 * A hot rescale (docs/design/016-rescale.md, "Hot cutover"): only the tasks whose parallelism changes
 * (C) are replaced; the rest keep running with their state in memory. The steps, each answered by every
 * worker that runs a task taking part (C, the tasks feeding C, those C feeds) with a BeginRescaleAck:
 *
 *   BeginRescale(N) ──armed──► checkpoint N (its commit goes out first) ──► CutoverRebind ──rebound──►
 *   new C deployed from N (rescaled) and told its peers ──► CutoverPeerUpdate ──released──► running
 *
 * Before N completes, a failure gives the rescale up (the armed subtasks go on: an empty
 * CutoverPeerUpdate) and the caller falls back to drain and replan; after it, the job is drained and
 * replanned from N. A lost worker is the failure handler's, as at any time.
 */
import type { Logger } from '../log/index.js';
import { networkEdges, subtaskKey, type PhysicalPlan } from '../plan/index.js';
import { makeMessage, type Message, type MessageOf } from '../protocol/index.js';
import { deferred, type Clock, type Deferred } from '../util/index.js';
import type { CompletedMarker } from './checkpoint-storage.js';
import { peersOf } from './deployer.js';
import type { JobCutover, JobRescale, JobState, StagedRescale, SubtaskState, WorkerSession } from './job-state.js';
import { placementSubtasks, type PlacementPlan, type PlacementSubtask } from './placement.js';

/** The tasks a hot rescale replaces (C) and the running ones beside them that wait while it does. */
export interface CutoverTasks {
  changed: string[];
  neighbours: string[];
}

/**
 * Whether `next` can replace `now` in place: the same tasks, chains and edges, some tasks at another
 * parallelism, and some task left running beside them. Returns why not otherwise.
 */
export function cutoverTasks(now: PhysicalPlan, next: PhysicalPlan): CutoverTasks | string {
  const shape = (p: PhysicalPlan): string =>
    JSON.stringify({ tasks: p.tasks.map((t) => [t.id, t.operators.map((o) => o.id)]), edges: p.spec.edges });
  if (shape(now) !== shape(next)) return 'the new parallelism changes how its operators chain or connect';
  const before = new Map(now.tasks.map((t) => [t.id, t.parallelism]));
  const changed = new Set(next.tasks.filter((t) => before.get(t.id) !== t.parallelism).map((t) => t.id));
  const neighbours = new Set<string>();
  for (const { up, down } of networkEdges(next)) {
    if (changed.has(up.id) && !changed.has(down.id)) neighbours.add(down.id);
    if (changed.has(down.id) && !changed.has(up.id)) neighbours.add(up.id);
  }
  if (changed.size === 0) return 'no task changes parallelism';
  if (neighbours.size === 0) return 'every task changes parallelism, so none would keep running';
  return { changed: [...changed], neighbours: [...neighbours] };
}

/** How often a waiting step looks whether the job still runs. */
const CUTOVER_STATE_CHECK_MS = 25;

export type CutoverResult =
  | { ok: true; checkpointId: number; pauseMs: number }
  /** `checkpointId` 0: given up before its checkpoint completed, the job untouched; else drained and replanned from it. */
  | { ok: false; checkpointId: number; message: string };

export interface HotCutoverDeps {
  clock: Clock;
  log: Logger;
  post: (s: WorkerSession, m: Message) => void;
  /** Slots for the new subtasks (beside the job's own). */
  place: (job: JobState, subtasks: PlacementSubtask[]) => Promise<PlacementPlan>;
  /** The job's newest completed checkpoint of its own. */
  newestCheckpoint: (job: JobState) => Promise<CompletedMarker | undefined>;
  slotSharing: boolean;
  /** How long each step may take. */
  stepTimeoutMs: number;
}

interface StepWait {
  rescaleId: number;
  phase: string;
  pending: Set<WorkerSession>;
  /** Settles when every session has answered, or one refused. */
  answered: Deferred<void>;
}

/** What a rescale asks of the job it rescales (its JobMaster): the job's record changes only through these. */
export interface RescaleTarget {
  readonly job: JobState;
  /** Drain and replan from a rescale's checkpoint (RESCALING). */
  rescale(staged: StagedRescale): void;
  beginCutover(rescaleId: number): JobCutover;
  endCutover(cutover: JobCutover): void;
  adoptCutover(staged: Omit<StagedRescale, 'checkpointId'>, retired: readonly SubtaskState[]): void;
  recordRescale(r: JobRescale): void;
  deploy(placement: PlacementPlan, restore: CompletedMarker | undefined): void;
}

export class HotCutover {
  private seq = 0;
  private readonly waits = new Map<JobState, StepWait>();

  constructor(private readonly deps: HotCutoverDeps) {}

  /** A worker's BeginRescaleAck. */
  onAck(job: JobState, s: WorkerSession, m: MessageOf<'BeginRescaleAck'>): void {
    const w = this.waits.get(job);
    if (!w || w.rescaleId !== m.rescaleId || w.phase !== m.phase) return;
    if (!m.ok) w.answered.reject(new Error(`worker ${s.id}: ${m.message}`));
    w.pending.delete(s);
    if (w.pending.size === 0) w.answered.resolve();
  }

  /** Replace the tasks `tasks.changed` of `job` by those of `staged`, from a checkpoint taken now. */
  async run(
    target: RescaleTarget,
    staged: Omit<StagedRescale, 'checkpointId'>,
    tasks: CutoverTasks,
  ): Promise<CutoverResult> {
    const job = target.job;
    const rescaleId = ++this.seq;
    const changed = new Set(tasks.changed);
    const involved = new Set([...tasks.changed, ...tasks.neighbours]);
    const armed = [...new Set(job.subtasks.filter((t) => !t.finished && involved.has(t.taskId)).map((t) => t.session))];
    const cutover = target.beginCutover(rescaleId);
    let checkpointId = 0;
    // The tasks taking part stop at the cutover checkpoint's barrier, soon after its trigger.
    let triggeredAt = 0;
    let completed = false;
    try {
      const taken = await job.checkpointing.checkpointNow(`the rescale of job ${job.id}`, async (id) => {
        checkpointId = id;
        await this.step(
          job,
          rescaleId,
          armed,
          'armed',
          makeMessage('BeginRescale', {
            jobId: job.id,
            rescaleId,
            cutoverCheckpointId: id,
            operatorId: '',
            newParallelism: 0,
            specJson: staged.specJson,
            tasks: tasks.changed,
          }),
        );
        triggeredAt = this.deps.clock.now();
        this.deps.log.info(
          { jobId: job.id, rescaleId, checkpointId: id },
          `hot rescale of job ${job.id} armed on ${armed.length} workers at checkpoint ${id} (${staged.changes.join(', ')})`,
        );
      });
      if (!taken.ok) {
        checkpointId = 0;
        throw new Error(taken.message);
      }
      completed = true;
      const at = { checkpoint: this.deps.clock.now(), rebound: 0, deployed: 0, started: 0 };
      // Its commit went out before this: the old subtasks of C commit, then retire.
      const old = job.subtasks.filter((t) => changed.has(t.taskId));
      for (const t of old) t.retiring = true;
      await this.step(
        job,
        rescaleId,
        armed,
        'rebound',
        makeMessage('CutoverRebind', { jobId: job.id, rescaleId, tasks: [] }),
      );
      at.rebound = this.deps.clock.now();
      const left = old.find((t) => !t.finished);
      if (left) throw new Error(`subtask ${subtaskKey(left.taskId, left.index)} did not retire`);
      const restore = await this.deps.newestCheckpoint(job);
      if (restore?.checkpointId !== checkpointId) throw new Error(`checkpoint ${checkpointId} is not the job's newest`);
      target.adoptCutover(staged, old);
      rewire(job, changed);
      const connected = new Promise<void>((resolve) => (cutover.connected = resolve));
      const placement = await this.deps.place(
        job,
        placementSubtasks(job.plan, this.deps.slotSharing, (s) => changed.has(s.taskId)),
      );
      this.assertCurrent(job, rescaleId);
      target.deploy(placement, restore);
      at.deployed = this.deps.clock.now();
      await this.until(job, rescaleId, 'the new subtasks to start', connected);
      at.started = this.deps.clock.now();
      const update = job.subtasks
        .filter((t) => tasks.neighbours.includes(t.taskId))
        .map((st) => ({ taskId: st.taskId, subtaskIndex: st.index, peers: peersOf(job, st, changed) }));
      // A worker whose old subtasks all retired still holds the armed rescale: it is released too.
      await this.step(
        job,
        rescaleId,
        armed,
        'released',
        makeMessage('CutoverPeerUpdate', { jobId: job.id, rescaleId, subtasks: update }),
      );
      const pauseMs = this.deps.clock.now() - triggeredAt;
      const steps = {
        checkpointMs: at.checkpoint - triggeredAt,
        reboundMs: at.rebound - at.checkpoint,
        deployMs: at.deployed - at.rebound,
        startMs: at.started - at.deployed,
        releaseMs: this.deps.clock.now() - at.started,
      };
      this.deps.log.info(
        { jobId: job.id, rescaleId, ...steps },
        `hot rescale of job ${job.id}: checkpoint ${steps.checkpointMs} ms, retire and rebind ${steps.reboundMs} ms, place ${steps.deployMs} ms, new subtasks started ${steps.startMs} ms, release ${steps.releaseMs} ms`,
      );
      target.recordRescale({
        requestedAt: staged.requestedAt,
        at: triggeredAt,
        deployedAt: this.deps.clock.now(),
        runningAt: this.deps.clock.now(),
        changes: staged.changes,
        restoredFrom: checkpointId,
        attempt: job.attempt,
        cause: staged.cause,
        mode: 'hot-cutover',
      });
      return { ok: true, checkpointId, pauseMs };
    } catch (err) {
      const message = (err as Error).message;
      target.endCutover(cutover);
      this.waits.delete(job);
      if (job.state !== 'RUNNING') return { ok: false, checkpointId, message };
      if (!completed) {
        // Given up before the checkpoint completed: nothing was replaced, the armed subtasks go on.
        this.deps.log.warn({ jobId: job.id, rescaleId }, `hot rescale of job ${job.id} given up: ${message}`);
        for (const s of armed)
          if (s.state === 'active')
            this.deps.post(s, makeMessage('CutoverPeerUpdate', { jobId: job.id, rescaleId, subtasks: [] }));
        return { ok: false, checkpointId: 0, message };
      }
      this.deps.log.warn(
        { jobId: job.id, rescaleId, checkpointId },
        `hot rescale of job ${job.id} failed after checkpoint ${checkpointId}: ${message}; draining and replanning from it`,
      );
      target.rescale({ ...staged, checkpointId });
      return { ok: false, checkpointId, message };
    } finally {
      target.endCutover(cutover);
    }
  }

  private assertCurrent(job: JobState, rescaleId: number): void {
    if (job.state !== 'RUNNING' || job.cutover?.rescaleId !== rescaleId)
      throw new Error(`the job stopped running (it is ${job.state})`);
  }

  /** Send `m` to `sessions` and wait for each one's ack of `phase`. */
  private async step(
    job: JobState,
    rescaleId: number,
    sessions: WorkerSession[],
    phase: string,
    m: Message,
  ): Promise<void> {
    const w: StepWait = {
      rescaleId,
      phase,
      pending: new Set(sessions.filter((s) => s.state === 'active')),
      answered: deferred<void>(),
    };
    this.waits.set(job, w);
    if (w.pending.size === 0) w.answered.resolve();
    for (const s of w.pending) this.deps.post(s, m);
    // A worker gone meanwhile answers nothing: if it ran a subtask of the job, the job restarts (and the
    // wait fails); if its subtasks had all retired, nothing of the job is left there to wait for.
    const gone = (): void => {
      for (const s of w.pending) if (s.state !== 'active') w.pending.delete(s);
      if (w.pending.size === 0) w.answered.resolve();
    };
    await this.until(job, rescaleId, `every worker's ${phase} answer`, w.answered.promise, gone);
  }

  /**
   * Wait for `done`, failing when the job stops running (a lost worker: the failure handler's) or the
   * step's time runs out. The answer is taken when it comes; the job's state is looked at now and then.
   */
  private until(job: JobState, rescaleId: number, what: string, done: Promise<void>, look?: () => void): Promise<void> {
    const deadline = this.deps.clock.now() + this.deps.stepTimeoutMs;
    return new Promise((resolve, reject) => {
      const stop = this.deps.clock.every(CUTOVER_STATE_CHECK_MS, () => {
        try {
          this.assertCurrent(job, rescaleId);
          look?.();
          if (this.deps.clock.now() >= deadline) throw new Error(`no ${what} within ${this.deps.stepTimeoutMs} ms`);
        } catch (err) {
          stop();
          reject(err as Error);
        }
      });
      done.then(
        () => {
          stop();
          resolve();
        },
        (err: unknown) => {
          stop();
          reject(err as Error);
        },
      );
    });
  }
}

/** Each input fed by a rescaled task C gets C's new channels: the workers appended them on the same data port (CutoverRebind). */
function rewire(job: JobState, changed: ReadonlySet<string>): void {
  for (const { edge, up, down } of networkEdges(job.plan)) {
    if (!changed.has(up.id) || changed.has(down.id)) continue;
    for (const st of job.subtasks.filter((t) => t.taskId === down.id)) {
      const port = st.listening?.[0]?.port;
      if (port === undefined) continue;
      const kept = (st.listening ?? []).filter((p) => p.upstreamTaskId !== up.id || p.inputIndex !== edge.inputIndex);
      st.listening = [
        ...kept,
        ...Array.from({ length: up.parallelism }, (_, u) => ({
          inputIndex: edge.inputIndex,
          upstreamTaskId: up.id,
          upstreamSubtask: u,
          port,
        })),
      ];
    }
  }
}
