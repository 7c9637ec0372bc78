/**
 * A mesh run from one member's process (design record 017): rendezvous (as leader or joiner), open the
 * links, derive the placement and this member's slice, run it; the leader also drives the run
 * (leader.ts). A failure ends the attempt on every member; with `restart` the members rendezvous again
 * and resume from the last completed checkpoint, else the run fails with the cause.
 */
import type { CheckpointSettings } from '../client/index.js';
import {
  diskCheckpointStorage,
  jobDir,
  recordRestore,
  resolveRestore,
  type CompletedMarker,
} from '../coordinator/index.js';
import { LinkPlane } from '../dataplane/index.js';
import type { LoadedJob } from '../loader/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import type { FrameConnection } from '../net/index.js';
import type { PhysicalPlan } from '../plan/index.js';
import { makeMessage, type Message } from '../protocol/index.js';
import { setRepeating, systemClock } from '../util/index.js';
import { memberSlice } from './deploy.js';
import { topologyFingerprint, type TopologyShape } from './fingerprint.js';
import { LeaderRun, type RunOutcome } from './leader.js';
import { ExchangeListener, openMesh } from './links.js';
import { MemberRun } from './member.js';
import { meshPlacement } from './placement.js';
import { hostPort, join, lead, MeshError, type Joined, type Led } from './rendezvous.js';

export interface MeshRunOptions {
  role: { lead: number; control: string } | { join: string };
  exchange: string;
  module: LoadedJob;
  plan: PhysicalPlan;
  specJson: string;
  shape: TopologyShape;
  params: Record<string, string>;
  buildParallelism: number;
  checkpoint: CheckpointSettings;
  /** After a failure, rendezvous again and resume from the last completed checkpoint. */
  restart: boolean;
  /** Deadline of each rendezvous and of opening the links. */
  timeoutMs: number;
  /** A control connection silent this long is a lost member (or leader). @default DEFAULT_MESH_HEARTBEAT_TIMEOUT_MS */
  heartbeatTimeoutMs?: number;
  batchSize: number;
  batchLingerMs: number;
  /** @default 0 */
  debloatTargetMs?: number;
  log: Logger;
  metrics: ClinkMetrics;
  stdout?: (text: string) => void | Promise<void>;
  /** Told the leader's control port once it listens. */
  onListening?: (port: number) => void;
  /** Told each attempt's membership once settled. */
  onMembers?: (m: { members: string[]; me: number; attempt: number; restoreCheckpointId: number }) => void;
}

/** What the leader's process reports at the end; a joiner's run ends with `collected` empty and `runMs` 0. */
export type MeshOutcome = RunOutcome & {
  attempts: number;
  members: string[];
  /** Links in the mesh: one per pair. */ links: number;
};

/** How often the leader and each member tell each other they are there. */
const HEARTBEAT_MS = 1_000;
/** @default for MeshRunOptions.heartbeatTimeoutMs */
export const DEFAULT_MESH_HEARTBEAT_TIMEOUT_MS = 10_000;

/** How long the leader waits for a member to hang up after its MeshStop. */
const HANG_UP_MS = 2_000;

/** Half-close `conn` (what was written goes first), then wait up to `ms` for the peer to close it. */
async function hangUp(conn: FrameConnection, ms: number): Promise<void> {
  conn.socket.end();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([conn.closed, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
  conn.close();
}

/** A run's checkpoint job id: stable across attempts and processes (its checkpoints live under it). */
export const meshJobId = (name: string): string => `mesh-${name.replace(/[^A-Za-z0-9_.-]/g, '-')}`;

export async function runMesh(o: MeshRunOptions): Promise<MeshOutcome> {
  const listener = await ExchangeListener.listen(o.exchange);
  const jobName = o.plan.spec.job.name;
  const jobId = meshJobId(jobName);
  try {
    for (let attempt = 0; ; attempt++) {
      const r = await runAttempt(o, listener, jobId, jobName, attempt);
      if (r.ok)
        return {
          ok: r.ok,
          reason: r.reason,
          collected: r.collected,
          lastCheckpointId: r.lastCheckpointId,
          runMs: r.runMs,
          members: r.members,
          attempts: attempt + 1,
          links: (r.members.length * (r.members.length - 1)) / 2,
        };
      if (!o.restart)
        throw new MeshError(
          `mesh run of ${jobName} failed: ${r.reason}${r.checkpointed ? '; run every member with --restart to resume from the last checkpoint' : ''}`,
        );
      o.log.warn(
        { attempt },
        `mesh run of ${jobName} attempt ${attempt} failed: ${r.reason}; rendezvous again to resume from the last checkpoint (--restart)`,
      );
    }
  } finally {
    listener.close();
  }
}

/** The newest completed checkpoint of the run's job whose files verify, if any. */
async function latestCheckpoint(checkpoint: CheckpointSettings, jobId: string): Promise<CompletedMarker | undefined> {
  if (!checkpoint.checkpointDir) return undefined;
  try {
    return (await resolveRestore(jobDir(checkpoint.checkpointDir, jobId), 0)).marker;
  } catch {
    return undefined;
  }
}

async function runAttempt(
  o: MeshRunOptions,
  listener: ExchangeListener,
  jobId: string,
  jobName: string,
  attempt: number,
): Promise<RunOutcome & { members: string[]; checkpointed: boolean }> {
  const exchange = listener.address;
  let membership: Led | Joined;
  let restore: CompletedMarker | undefined;
  let restoreDir = '';
  let checkpoint = o.checkpoint;
  if ('lead' in o.role) {
    // The run's own newest checkpoint (--restart), else the restore point it was started with.
    const own = o.restart || attempt > 0 ? await latestCheckpoint(o.checkpoint, jobId) : undefined;
    if (own) {
      restore = own;
      restoreDir = jobDir(o.checkpoint.checkpointDir, jobId);
    } else if (o.checkpoint.restoreFromDir) {
      const point = await resolveRestore(o.checkpoint.restoreFromDir, o.checkpoint.restoreFromCheckpointId);
      restore = point.marker;
      restoreDir = point.markerDir;
    }
    membership = await lead({
      members: o.role.lead,
      control: hostPort(o.role.control, '--control'),
      exchange,
      shape: o.shape,
      timeoutMs: o.timeoutMs,
      restoreCheckpointId: restore?.checkpointId ?? 0,
      restoreDir,
      checkpointJson: JSON.stringify(o.checkpoint),
      attempt,
      ...(o.onListening ? { onListening: o.onListening } : {}),
    });
    if (restore && o.checkpoint.checkpointDir) await recordRestore(o.checkpoint.checkpointDir, jobId, restore);
  } else {
    membership = await join({ leader: o.role.join, exchange, shape: o.shape, timeoutMs: o.timeoutMs });
    // The run checkpoints as the leader says: a member need not repeat the flags, and cannot differ.
    if (membership.checkpointJson) checkpoint = JSON.parse(membership.checkpointJson) as CheckpointSettings;
    if (membership.restoreCheckpointId > 0)
      restore = (await resolveRestore(membership.restoreDir, membership.restoreCheckpointId)).marker;
  }
  const { members, me } = membership;
  o.onMembers?.({ members, me, attempt: membership.attempt, restoreCheckpointId: membership.restoreCheckpointId });
  const controls: FrameConnection[] = 'joiners' in membership ? [...membership.joiners.values()] : [membership.leader];
  let links;
  try {
    links = await openMesh({
      members,
      me,
      listener,
      fingerprint: topologyFingerprint(o.shape),
      timeoutMs: o.timeoutMs,
    });
  } catch (err) {
    membership.close();
    throw err;
  }
  const placement = meshPlacement(o.plan, members);
  const slice = memberSlice({
    jobId,
    jobName,
    plan: o.plan,
    specJson: o.specJson,
    module: o.module,
    params: o.params,
    buildParallelism: o.buildParallelism,
    checkpoint,
    placement,
    members,
    me,
    attempt: membership.attempt,
    ...(restore ? { restore } : {}),
  });
  const plane = new LinkPlane({
    links: new Map([...links.peers].map(([j, conn]) => [members[j]!, conn])),
    port: hostPort(exchange, '--exchange').port,
    log: o.log,
    metrics: o.metrics,
  });
  let toLeader: (m: Message) => void;
  let leaderEnded: Promise<RunOutcome> | undefined;
  const member: MemberRun = new MemberRun(
    slice,
    {
      workerId: `member-${me}`,
      peerUpdateTimeoutMs: o.timeoutMs,
      batchSize: o.batchSize,
      batchLingerMs: o.batchLingerMs,
      debloatTargetMs: o.debloatTargetMs ?? 0,
    },
    {
      data: plane,
      log: o.log,
      metrics: o.metrics,
      stdout: o.stdout ?? ((t) => void process.stdout.write(t)),
      toLeader: (m) => toLeader(m),
    },
  );
  const stopTick: (() => void)[] = [];
  const silence = o.heartbeatTimeoutMs ?? DEFAULT_MESH_HEARTBEAT_TIMEOUT_MS;
  // Silence counts from now: a member that registered early has been quiet while the others came.
  for (const c of controls) c.lastFrameAt = Date.now();
  if ('joiners' in membership) {
    const joiners = membership.joiners;
    const byMember = new Map(members.map((m, i) => [m, i]));
    let ended!: (r: RunOutcome) => void;
    leaderEnded = new Promise((r) => (ended = r));
    const run = new LeaderRun(
      {
        jobId,
        jobName,
        plan: o.plan,
        checkpoint,
        placement,
        members,
        restoredFrom: restore?.checkpointId ?? 0,
        oldestProtocol: membership.oldestProtocol,
      },
      {
        clock: systemClock,
        post: (i, m) => {
          if (i === me) queueMicrotask(() => void member.onControl(m));
          else joiners.get(members[i]!)?.send(m);
        },
        storage: diskCheckpointStorage(),
        log: o.log,
        metrics: o.metrics,
        ended,
      },
    );
    toLeader = (m) => queueMicrotask(() => run.onFrame(me, m));
    for (const [address, conn] of joiners) {
      const i = byMember.get(address)!;
      conn.start({ onMessage: (m) => run.onFrame(i, m) });
      // Its last frames (handled even after it hung up) come before the verdict on its loss.
      void conn.closed.then(async (c) => {
        await conn.drained();
        run.memberLost(i, c.error ? c.error.message : 'its control connection closed');
      });
    }
    const tick = setRepeating(() => {
      run.tick();
      for (const [address, conn] of joiners) {
        if (Date.now() - conn.lastFrameAt > silence) {
          run.memberLost(byMember.get(address)!, `no heartbeat for ${silence} ms`);
          conn.close();
        }
      }
    }, 100);
    stopTick.push(() => clearInterval(tick));
  } else {
    const conn = membership.leader;
    toLeader = (m) => void conn.send(m);
    const watch = setRepeating(() => {
      if (Date.now() - conn.lastFrameAt > silence) {
        member.end({
          ok: false,
          reason: `the mesh leader at ${'join' in o.role ? o.role.join : '?'} was lost (no heartbeat for ${silence} ms)`,
        });
        conn.close();
      }
    }, 100);
    stopTick.push(() => clearInterval(watch));
    conn.start({ onMessage: (m) => member.onControl(m) });
    // The leader's MeshStop, read before its connection ended, is the word that counts.
    void conn.closed.then(async (c) => {
      await conn.drained();
      member.end({
        ok: false,
        reason: `the mesh leader at ${'join' in o.role ? o.role.join : '?'} was lost (${c.error ? c.error.message : 'its control connection closed'})`,
      });
    });
  }
  const beat = setRepeating(() => {
    for (const c of controls) c.send(makeMessage('MeshHeartbeat', {}));
  }, HEARTBEAT_MS);
  stopTick.push(() => clearInterval(beat));
  // A lost link is a lost member: the leader fails the attempt everywhere. A member (the leader's own
  // too) only reports it: a link also closes when a member that has seen the run's end leaves (then the
  // leader has ended the run and ignores the report), and the leader waits a moment for the verdict on
  // the member behind it, the cause to name.
  for (const [j, conn] of links.peers) {
    void conn.closed.then(() => {
      const reason = `the mesh link between member ${me} (${members[me]}) and member ${j} (${members[j]}) was lost`;
      toLeader(makeMessage('MeshStop', { ok: false, reason }));
    });
  }
  try {
    await member.deploy();
    const stop = await member.stopped;
    const outcome = leaderEnded
      ? await leaderEnded
      : { ok: stop.ok, reason: stop.reason, collected: {}, lastCheckpointId: 0, runMs: 0 };
    return { ...outcome, members, checkpointed: checkpoint.checkpointDir !== '' };
  } finally {
    for (const s of stopTick) s();
    // The leader's MeshStop must reach every member: it half-closes each control connection after it
    // and waits (bounded) for the member to hang up, since closing outright with a member's frames
    // unread resets the connection, and a reset can drop the MeshStop still unread at the member.
    if ('joiners' in membership) await Promise.all(controls.map((c) => hangUp(c, HANG_UP_MS)));
    plane.close();
    membership.close();
  }
}
