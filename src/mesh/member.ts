/**
 * A member's side of one mesh run attempt (design record 017): it runs its own slice with the worker's
 * JobHost, over the mesh's links, and speaks to the leader over its control connection. It deploys its
 * slice and says MeshReady; on MeshStart its subtasks get their peers (derived, not sent) and run; the
 * leader's checkpoint frames go to the JobHost as a coordinator's would; what the JobHost reports back
 * (acks, ends, final-checkpoint requests) goes to the leader. MeshStop ends the attempt.
 */
import { makeMessage, type Message } from '../protocol/index.js';
import { JobHost, type JobHostConfig, type JobHostDeps } from '../worker/index.js';
import type { MemberSlice } from './deploy.js';

export interface MemberStop {
  ok: boolean;
  reason: string;
}

/** The JobHost's own dependencies, its frames going to the leader instead of a coordinator. */
export type MemberRunDeps = Pick<JobHostDeps, 'data' | 'log' | 'metrics' | 'stdout'> & {
  /** A frame to the leader. */
  toLeader: (m: Message) => void;
};

/** What a member forwards to the leader of what its JobHost reports. */
const FOR_LEADER: ReadonlySet<string> = new Set([
  'SubtaskFinished',
  'SubtaskCheckpointed',
  'CheckpointCommitted',
  'RequestFinalCheckpoint',
]);

export class MemberRun {
  private readonly host: JobHost;
  private resolveStopped!: (s: MemberStop) => void;
  /** Settles when the leader stops the attempt, or the attempt is given up here. */
  readonly stopped: Promise<MemberStop>;
  private stop: MemberStop | undefined;

  constructor(
    private readonly slice: MemberSlice,
    config: JobHostConfig,
    private readonly deps: MemberRunDeps,
  ) {
    this.stopped = new Promise((r) => (this.resolveStopped = r));
    this.host = new JobHost(slice.deploy.jobId, config, {
      data: deps.data,
      log: deps.log,
      metrics: deps.metrics,
      stdout: deps.stdout,
      send: (m) => {
        if (FOR_LEADER.has(m.type)) deps.toLeader(m);
      },
    });
  }

  /** Deploy this member's slice (its inputs take channels from here on), then tell the leader. */
  async deploy(): Promise<void> {
    if (this.slice.deploy.tasks.length > 0) await this.host.handle(this.slice.deploy);
    this.deps.toLeader(makeMessage('MeshReady', {}));
  }

  /** A frame from the leader. */
  async onControl(m: Message): Promise<void> {
    if (this.stop) return;
    switch (m.type) {
      case 'MeshStart':
        if (this.slice.deploy.tasks.length > 0) await this.host.handle(this.slice.peers);
        return;
      case 'TriggerCheckpoint':
      case 'ConvertCheckpoint':
      case 'CommitCheckpoint':
      case 'AbortCheckpoint':
      case 'FinalCheckpointAssigned':
      case 'CancelJob':
        await this.host.handle(m);
        return;
      case 'MeshStop':
        this.end({ ok: m.ok, reason: m.reason });
        return;
      case 'MeshHeartbeat':
        return;
      default:
        this.deps.log.warn({ type: m.type }, `mesh member: unexpected ${m.type} from the leader, ignored`);
    }
  }

  /** End the attempt here: what still runs is cancelled. */
  end(stop: MemberStop): void {
    if (this.stop) return;
    this.stop = stop;
    if (!stop.ok || this.host.running) this.host.cancelAll(stop.ok ? 'the run ended' : stop.reason);
    this.resolveStopped(stop);
  }
}
