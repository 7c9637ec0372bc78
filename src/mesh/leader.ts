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
import {
  CheckpointCoordinator,
  isTerminal,
  transition,
  type CheckpointStorage,
  type JobStateName,
  type PlacementSubtask,
} from '../coordinator/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { subtaskKey, type PhysicalPlan } from '../plan/index.js';
import { CONVERT_CHECKPOINT_PROTOCOL_VERSION, decodeCollected, makeMessage, type Message } from '../protocol/index.js';
import type { CheckpointSettings } from '../client/index.js';
import type { Clock } from '../util/index.js';

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
  /** The oldest protocol a member speaks. */
  oldestProtocol: number;
}

export interface LeaderRunDeps {
  clock: Clock;
  /** Send a frame to member `member` (the leader's own member included). */
  post: (member: number, m: Message) => void;
  storage: CheckpointStorage;
  log: Logger;
  metrics: ClinkMetrics;
  /** The run has ended (once). */
  ended: (outcome: RunOutcome) => void;
}

/** How long a member's report of a lost link waits for the loss of the member behind it. */
export const PEER_VERDICT_MS = 1_000;

type MeshSubtask = { taskId: string; index: number; member: number; finished: boolean; collected?: Uint8Array };

/** The run's job as its checkpoint coordinator reads it; its state moves through the coordinator's lifecycle table. */
interface MeshJob {
  readonly id: string;
  readonly name: string;
  readonly plan: PhysicalPlan;
  state: JobStateName;
  readonly checkpoint: CheckpointSettings;
  readonly subtasks: MeshSubtask[];
}

/**
 * One attempt of a mesh run, driving the same lifecycle as a coordinator's job (DEPLOYING -> RUNNING ->
 * FINISHED, or FAILED from either; no restart in place: a mesh run heals by running again, --restart).
 */
export class LeaderRun {
  readonly job: MeshJob;
  private readonly ready = new Set<number>();
  readonly checkpoints: CheckpointCoordinator;
  private failure: string | undefined;
  /** A member reported a failure; waiting a moment for the verdict on its cause. */
  private verdictPending = false;
  private runningAt: number | undefined;

  constructor(
    private readonly o: LeaderRunOptions,
    private readonly deps: LeaderRunDeps,
  ) {
    this.job = {
      id: o.jobId,
      name: o.jobName,
      plan: o.plan,
      state: 'DEPLOYING',
      checkpoint: o.checkpoint,
      subtasks: o.placement.flatMap((sts, member) =>
        sts.map((st) => ({ taskId: st.taskId, index: st.index, member, finished: false })),
      ),
    };
    const job = this.job;
    this.checkpoints = new CheckpointCoordinator(
      job,
      {
        post: (m) => {
          for (const member of new Set(job.subtasks.filter((t) => !t.finished).map((t) => t.member)))
            deps.post(member, m);
        },
        // A mesh run heals by running again (--restart), which the run's failure starts.
        failed: (reason) => this.fail(reason),
        maybeComplete: () => this.maybeComplete(),
        cancel: (reason) => this.fail(reason),
        convertsInPlace: () => o.oldestProtocol >= CONVERT_CHECKPOINT_PROTOCOL_VERSION,
      },
      { clock: deps.clock, storage: deps.storage, log: deps.log, metrics: deps.metrics },
      o.restoredFrom,
    );
  }

  /** Where the run stands (its job's lifecycle state). */
  get state(): JobStateName {
    return this.job.state;
  }

  private moveTo(to: JobStateName): void {
    this.job.state = transition(this.job.state, to, `mesh run of ${this.o.jobName}`);
  }

  /** A frame from member `member` about the run. */
  onFrame(member: number, m: Message): void {
    if (isTerminal(this.job.state)) return;
    switch (m.type) {
      case 'MeshReady':
        this.ready.add(member);
        if (this.job.state === 'DEPLOYING' && this.ready.size === this.o.members.length) {
          this.moveTo('RUNNING');
          this.runningAt = this.deps.clock.now();
          // The checkpoint interval counts from the start.
          this.checkpoints.resume(0);
          for (let i = 0; i < this.o.members.length; i++) this.deps.post(i, makeMessage('MeshStart', {}));
        }
        return;
      case 'SubtaskCheckpointed':
        this.checkpoints.onAck(m);
        return;
      case 'CheckpointCommitted':
        this.checkpoints.commits.confirmed(m);
        return;
      case 'RequestFinalCheckpoint':
        this.checkpoints.onFinalRequested(m.taskId, m.subtaskIndex);
        return;
      case 'SubtaskFinished': {
        const st = this.job.subtasks.find(
          (t) => t.taskId === m.taskId && t.index === m.subtaskIndex && t.member === member,
        );
        if (!st || st.finished) return;
        st.finished = true;
        if (m.ok) this.checkpoints.commits.ended(subtaskKey(m.taskId, m.subtaskIndex));
        if (m.collected.length > 0) st.collected = m.collected;
        const failed = `subtask ${subtaskKey(m.taskId, m.subtaskIndex)} failed on member ${member} (${this.o.members[member]}): ${m.error}`;
        // A peer gone is the likely cause of a subtask's failure that says so: wait for that verdict.
        if (!m.ok) m.peerLost ? this.awaitVerdict(failed) : this.fail(failed);
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
    if (this.job.state === 'RUNNING') this.checkpoints.tick();
  }

  /** The run fails: every member is told to stop, with the first cause. */
  fail(reason: string): void {
    if (isTerminal(this.job.state) || this.failure) return;
    this.failure = reason;
    this.checkpoints.forget(reason);
    this.moveTo('FAILED');
    this.deps.log.error({ jobId: this.o.jobId }, `mesh run of ${this.o.jobName} failed: ${reason}`);
    this.end(false, reason);
  }

  private maybeComplete(): void {
    const job = this.job;
    if (job.state !== 'RUNNING' || !job.subtasks.every((t) => t.finished)) return;
    if (this.checkpoints.holdsCompletion()) return;
    const marker = this.checkpoints.markerWritten();
    if (marker) {
      void marker.finally(() => this.maybeComplete());
      return;
    }
    this.moveTo('FINISHED');
    this.end(true, '');
  }

  private end(ok: boolean, reason: string): void {
    for (let i = 0; i < this.o.members.length; i++) this.deps.post(i, makeMessage('MeshStop', { ok, reason }));
    const collected: Record<string, unknown[]> = {};
    for (const st of this.job.subtasks) {
      if (!st.collected) continue;
      for (const [name, values] of Object.entries(decodeCollected(st.collected)))
        (collected[name] ??= []).push(...values);
    }
    const runMs = this.runningAt === undefined ? 0 : this.deps.clock.now() - this.runningAt;
    this.deps.ended({ ok, reason, collected, lastCheckpointId: this.checkpoints.history.lastId, runMs });
  }
}
