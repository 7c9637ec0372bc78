/**
 * The leader's side of one mesh run attempt (design record 017): it drives the run over the control
 * connections. Every member deploys its own slice and says MeshReady; once all have, MeshStart. Then
 * epochs: the coordinator's own CheckpointCoordinator triggers them (barriers at every member's
 * sources), collects each subtask's ack with its state file, writes the one COMPLETED marker in the
 * coordinator mode's layout (so a mesh checkpoint restores in either mode) and sends the commit. The
 * run finishes when every subtask has (and the final checkpoint, if any, is complete), and fails on a
 * member's failure or loss; either way every member is told with MeshStop.
 *
 * Decisions only: the posts, the clock and checkpoint storage are injected (unit-tested on a fake clock).
 */
import { CheckpointCoordinator, CommitLedger, type CheckpointCoordinatorDeps, type CheckpointedJob, type PlacementSubtask } from '../coordinator/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { subtaskKey, type PhysicalPlan } from '../plan/index.js';
import { decodeCollected, makeMessage, type Message } from '../protocol/index.js';
import type { CheckpointSettings } from '../client/index.js';
import type { Clock } from '../util/index.js';

/** Where the leader's run stands: legal moves are deploying -> running -> ended, and deploying -> ended. */
export type LeaderPhase = 'deploying' | 'running' | 'ended';
const MOVES: Record<LeaderPhase, readonly LeaderPhase[]> = { deploying: ['running', 'ended'], running: ['ended'], ended: [] };

export interface RunOutcome {
  ok: boolean;
  /** Why it failed ('' when ok). */
  reason: string;
  /** Every collect() sink's records, merged in plan order. */
  collected: Record<string, unknown[]>;
  /** The last checkpoint completed in this attempt (0: none). */
  lastCheckpointId: number;
  /** From MeshStart to the end (0 when it never started). */
  runMs: number;
}

export interface LeaderRunOptions {
  jobId: string;
  jobName: string;
  plan: PhysicalPlan;
  checkpoint: CheckpointSettings;
  placement: PlacementSubtask[][];
  members: readonly string[];
  /** The checkpoint the attempt resumed from (its ids number above it). */
  restoredFrom: number;
}

export interface LeaderRunDeps {
  clock: Clock;
  /** Send a frame to member `member` (the leader's own member included). */
  post: (member: number, m: Message) => void;
  storage: CheckpointCoordinatorDeps['storage'];
  log: Logger;
  metrics: ClinkMetrics;
  /** The run has ended (once). */
  ended: (outcome: RunOutcome) => void;
}

/** How long a member's report of a lost link waits for the loss of the member behind it. */
export const PEER_VERDICT_MS = 1_000;

type MeshSubtask = { taskId: string; index: number; member: number; finished: boolean; collected?: Uint8Array };
type MeshJob = Omit<CheckpointedJob, 'subtasks'> & { subtasks: MeshSubtask[] };

export class LeaderRun {
  phase: LeaderPhase = 'deploying';
  readonly job: MeshJob;
  private readonly ready = new Set<number>();
  private readonly checkpoints: CheckpointCoordinator<MeshJob>;
  private failure: string | undefined;
  /** A member reported a failure; waiting a moment for the verdict on its cause. */
  private verdictPending = false;
  private runningAt: number | undefined;

  constructor(
    private readonly o: LeaderRunOptions,
    private readonly deps: LeaderRunDeps,
  ) {
    const now = deps.clock.now();
    this.job = {
      id: o.jobId,
      name: o.jobName,
      plan: o.plan,
      state: 'DEPLOYING',
      checkpoint: o.checkpoint,
      lastCheckpointAt: now,
      checkpointFloor: o.restoredFrom,
      checkpoints: [],
      checkpointsCompleted: 0,
      restarts: [],
      restartsSpent: 0,
      commits: new CommitLedger(),
      subtasks: o.placement.flatMap((sts, member) => sts.map((st) => ({ taskId: st.taskId, index: st.index, member, finished: false }))),
    };
    this.checkpoints = new CheckpointCoordinator<MeshJob>({
      clock: deps.clock,
      storage: deps.storage,
      postToJob: (job, m) => {
        for (const member of new Set(job.subtasks.filter((t) => !t.finished).map((t) => t.member))) deps.post(member, m);
      },
      // A mesh run heals by running again (--restart), which the run's failure starts.
      finalFailed: (_job, reason) => this.fail(reason),
      maybeComplete: () => this.maybeComplete(),
      cancel: (_id, reason) => this.fail(reason),
      log: deps.log,
      metrics: deps.metrics,
      restartBudgetResetAfterMs: Number.MAX_SAFE_INTEGER,
    });
  }

  private move(to: LeaderPhase): void {
    if (!MOVES[this.phase].includes(to)) throw new Error(`mesh run: illegal move ${this.phase} -> ${to}`);
    this.phase = to;
  }

  /** A frame from member `member` about the run. */
  onFrame(member: number, m: Message): void {
    if (this.phase === 'ended') return;
    switch (m.type) {
      case 'MeshReady':
        this.ready.add(member);
        if (this.phase === 'deploying' && this.ready.size === this.o.members.length) {
          this.move('running');
          this.runningAt = this.deps.clock.now();
          this.job.state = 'RUNNING';
          this.job.lastCheckpointAt = this.deps.clock.now();
          for (let i = 0; i < this.o.members.length; i++) this.deps.post(i, makeMessage('MeshStart', {}));
        }
        return;
      case 'SubtaskCheckpointed':
        this.checkpoints.onAck(this.job, m);
        return;
      case 'CheckpointCommitted':
        this.checkpoints.onCommitted(this.job, m);
        return;
      case 'RequestFinalCheckpoint':
        this.checkpoints.onFinalRequested(this.job, m.taskId, m.subtaskIndex);
        return;
      case 'SubtaskFinished': {
        const st = this.job.subtasks.find((t) => t.taskId === m.taskId && t.index === m.subtaskIndex && t.member === member);
        if (!st || st.finished) return;
        st.finished = true;
        if (m.ok) this.checkpoints.onSubtaskEnded(this.job, subtaskKey(m.taskId, m.subtaskIndex));
        if (m.collected.length > 0) st.collected = m.collected;
        const failed = `subtask ${subtaskKey(m.taskId, m.subtaskIndex)} failed on member ${member} (${this.o.members[member]}): ${m.error}`;
        // A peer gone is the likely cause of a subtask's failure that says so: wait for that verdict.
        if (!m.ok) (m.peerLost ? this.awaitVerdict(failed) : this.fail(failed));
        this.maybeComplete();
        return;
      }
      case 'MeshStop':
        // A member's report (a link lost) is most likely a consequence of another member's loss: the
        // verdict on that member, if it comes soon, is the cause to report.
        if (!m.ok) this.awaitVerdict(`member ${member} (${this.o.members[member]}) stopped: ${m.reason}`);
        return;
      default:
        return;
    }
  }

  /** Member `member`'s control connection is gone (EOF, a socket error, heartbeat silence). */
  memberLost(member: number, cause: string): void {
    this.fail(`member ${member} (${this.o.members[member]}) lost (${cause})`);
  }

  /** Fail with `reason` unless the loss of a member behind it is heard within PEER_VERDICT_MS (that is the cause, then). */
  private awaitVerdict(reason: string): void {
    if (this.verdictPending) return;
    this.verdictPending = true;
    this.deps.clock.after(PEER_VERDICT_MS, () => this.fail(reason));
  }

  /** The periodic sweep: checkpoints due, checkpoints overdue. */
  tick(): void {
    if (this.phase === 'running') this.checkpoints.tick([this.job]);
  }

  /** The run fails: every member is told to stop, with the first cause. */
  fail(reason: string): void {
    if (this.phase === 'ended' || this.failure) return;
    this.failure = reason;
    this.job.state = 'FAILED';
    this.checkpoints.forget(this.job, reason);
    this.deps.log.error({ jobId: this.o.jobId }, `mesh run of ${this.o.jobName} failed: ${reason}`);
    this.end(false, reason);
  }

  private maybeComplete(): void {
    const job = this.job;
    if (this.phase !== 'running' || !job.subtasks.every((t) => t.finished)) return;
    if (job.pendingCheckpoint?.final || (job.startingCheckpoint && this.checkpoints.finalWanted(job))) return;
    if (job.markerWrite) {
      void job.markerWrite.finally(() => this.maybeComplete());
      return;
    }
    job.state = 'FINISHED';
    this.end(true, '');
  }

  private end(ok: boolean, reason: string): void {
    this.move('ended');
    for (let i = 0; i < this.o.members.length; i++) this.deps.post(i, makeMessage('MeshStop', { ok, reason }));
    const collected: Record<string, unknown[]> = {};
    for (const st of this.job.subtasks) {
      if (!st.collected) continue;
      for (const [name, values] of Object.entries(decodeCollected(st.collected))) (collected[name] ??= []).push(...values);
    }
    const runMs = this.runningAt === undefined ? 0 : this.deps.clock.now() - this.runningAt;
    this.deps.ended({ ok, reason, collected, lastCheckpointId: this.job.checkpoints.at(-1)?.checkpointId ?? 0, runMs });
  }
}
