/**
 * The worker registry: a session per registered worker (its outbox, its slots), registration and
 * re-registration (the old session retired once its connection is read to the end), the watchdog's
 * verdicts (silence, overflow, stall: `worker lost: <id> (<cause>)`), posting frames, and the flush at
 * stop. What a session's loss means for jobs is the coordinator's, told through its WorkerEvents.
 */
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { type FrameConnection, Outbox, peerIdentity, writeFrame } from '../net/index.js';
import { encodeFrame, LOCAL_PROTOCOL, makeMessage, type Message, type MessageOf } from '../protocol/index.js';
import type { Clock } from '../util/index.js';
import type { CoordinatorConfig } from './config.js';
import { freeSlots, type JobState, type WorkerSession, type WorkerView } from './job-state.js';
import { workerView } from './job-views.js';
import { subtaskKey } from '../plan/index.js';

/** A worker session that ended: lost by a verdict (its cause) or retired (replaced, or shut down). */
export interface DepartedSession {
  workerId: string;
  session: number;
  state: 'lost' | 'retired';
  cause: string;
  at: number;
}

/** Ended sessions the registry remembers for the API. */
export const DEPARTED_LISTED = 50;

export interface WorkerRegistryDeps {
  config: CoordinatorConfig;
  clock: Clock;
  log: Logger;
  watchdogLog: Logger;
  /** Refusals a flood would repeat (a registration past the cap, retried), rate-limited. @default log */
  admissionLog?: { warn(msg: string): void };
  metrics: ClinkMetrics;
  /** Who hears what the sessions do. */
  events: WorkerEvents;
}

/** What the registry tells of its sessions (the coordinator's router). */
export interface WorkerEvents {
  /** A session opened: capacity changed. */
  registered(s: WorkerSession): void;
  /** A heartbeat's progress of the jobs on it. */
  progress(s: WorkerSession, heartbeat: MessageOf<'Heartbeat'>): void;
  /** A frame of the session, in order. */
  frame(s: WorkerSession, m: Message): void;
  /** The session is gone; its unfinished subtasks fail with `error`. */
  gone(s: WorkerSession, error: string): void;
}

/** Wait for `p`, but no longer than `ms`. */
async function boundedWait(p: Promise<unknown>, ms: number, clock: Clock): Promise<void> {
  let cancel: (() => void) | undefined;
  await Promise.race([p, new Promise<void>((r) => (cancel = clock.after(ms, r)))]);
  cancel?.();
}

export class WorkerRegistry {
  /** The current session of each worker id. */
  readonly sessions = new Map<string, WorkerSession>();
  /** The newest sessions that ended, newest last (DEPARTED_LISTED at most): the API's verdicts. */
  readonly departed: DepartedSession[] = [];
  /** Sessions retired (lost or replaced) whose connections may still be closing. */
  private readonly retired = new Set<WorkerSession>();
  private sessionSeq = 0;
  /** When a worker last registered: a restart waiting for slots gives a newcomer its full wait. */
  lastRegistrationAt = 0;

  constructor(private readonly deps: WorkerRegistryDeps) {
    const m = deps.metrics;
    m.gauge('clink_coordinator_workers_registered', 'Workers with a live session', () => this.active().length);
    m.gauge('clink_coordinator_slots_total', 'Slots of all registered workers', () =>
      this.active().reduce((n, s) => n + s.slots, 0),
    );
    m.gauge('clink_coordinator_slots_free', 'Free slots of all registered workers', () =>
      this.active().reduce((n, s) => n + freeSlots(s), 0),
    );
  }

  private get config(): CoordinatorConfig {
    return this.deps.config;
  }

  private get clock(): Clock {
    return this.deps.clock;
  }

  private get log(): Logger {
    return this.deps.log;
  }

  private get watchdogLog(): Logger {
    return this.deps.watchdogLog;
  }

  /** Sessions that can take work. */
  active(): WorkerSession[] {
    return [...this.sessions.values()].filter((s) => s.state === 'active');
  }

  /** A worker's Register, admitted: refuse it (`refusal`: another protocol), or open its session. */
  async register(
    conn: FrameConnection,
    m: MessageOf<'Register'>,
    admissionId: number,
    refusal: string | undefined,
  ): Promise<void> {
    const ack = (ok: boolean, message: string, extra: { retryable?: boolean; session?: number } = {}): Promise<void> =>
      writeFrame(
        conn.socket,
        makeMessage('RegisterAck', {
          ok,
          message,
          protocolVersion: LOCAL_PROTOCOL.version,
          minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
          retryable: extra.retryable ?? false,
          session: extra.session ?? 0,
          epoch: this.config.epoch,
        }),
      );
    if (refusal) {
      await ack(false, refusal).catch(() => undefined);
      conn.close();
      return;
    }
    const current = this.sessions.get(m.workerId);
    if (current && current.state === 'active' && current.admissionId > admissionId) {
      this.log.warn(
        { workerId: m.workerId },
        `stale registration of worker ${m.workerId} refused: its connection is older than session ${current.session}`,
      );
      await ack(false, `stale registration: an older connection than the worker's session ${current.session}`).catch(
        () => undefined,
      );
      conn.close();
      return;
    }
    // Under mTLS a worker id belongs to the certificate that registered it: another one cannot take it over.
    const credential = peerIdentity(conn.socket);
    if (current && current.state === 'active' && current.credential !== credential) {
      this.deps.metrics.authRefusals.inc({ role: 'worker' });
      this.log.warn(
        { workerId: m.workerId },
        `registration of worker ${m.workerId} from ${conn.peer} refused: the id is held by the certificate '${current.credential}', this one is '${credential}'`,
      );
      await ack(
        false,
        `worker id ${m.workerId} is registered by another certificate ('${current.credential}'); give this worker an id of its own`,
      ).catch(() => undefined);
      conn.close();
      return;
    }
    // A new worker past the cap is refused as busy (the worker retries): a flood of registrations holds
    // at most --max-worker-sessions sessions. A worker registering again replaces its own.
    const open = [...this.sessions.values()].filter((s) => s.state === 'active' || s.state === 'retiring').length;
    if (
      !(current && (current.state === 'active' || current.state === 'retiring')) &&
      open >= this.config.maxWorkerSessions
    ) {
      this.deps.metrics.workerSessionsRefused.inc();
      (this.deps.admissionLog ?? this.log).warn(
        `registration of worker ${m.workerId} from ${conn.peer} refused: ${open} worker sessions are open (--max-worker-sessions ${this.config.maxWorkerSessions})`,
      );
      await ack(
        false,
        `coordinator busy: ${open} worker sessions are open, the most --max-worker-sessions allows; retry`,
        { retryable: true },
      ).catch(() => undefined);
      conn.close();
      return;
    }
    if (current && current.state === 'active' && current.outbox.stopped?.byItself) {
      // Its outbox stopped by itself (overflow): the watchdog's verdict (with the real cause) comes at its
      // next tick. An outbox stopped because the connection closed awaits no verdict: the new session retires it.
      await ack(
        false,
        `worker ${m.workerId}'s session ${current.session} is still being retired; register again shortly`,
        { retryable: true },
      ).catch(() => undefined);
      conn.close();
      return;
    }
    const session: WorkerSession = {
      id: m.workerId,
      session: ++this.sessionSeq,
      admissionId,
      conn,
      outbox: undefined as unknown as Outbox,
      slots: m.slotCount,
      slotShares: new Map(),
      dataHost: m.dataHost,
      httpPort: m.httpPort,
      runtime: m.runtime,
      protocolVersion: m.protocolVersion,
      registeredAt: this.clock.now(),
      lastSeen: this.clock.now(),
      state: 'active',
      shippedModules: new Set(),
      credential,
    };
    // The RegisterAck is the first frame on the connection, sent before the session's outbox exists.
    try {
      await ack(true, 'registered', { session: session.session });
    } catch (err) {
      this.log.warn(
        { workerId: m.workerId, err },
        `RegisterAck to worker ${m.workerId} failed: ${(err as Error).message}`,
      );
      conn.close();
      return;
    }
    if (current && current.state === 'active')
      this.retire(current, `worker ${m.workerId} registered again (session ${session.session})`);
    session.outbox = new Outbox(conn.socket, {
      limits: {
        maxControlFrames: this.config.maxOutboundControlFrames,
        maxControlBytes: this.config.maxOutboundControlBytes,
        maxBulkBytes: this.config.maxOutboundBulkBytes,
      },
      metrics: this.deps.metrics,
      log: this.log,
      peer: m.workerId,
    });
    this.sessions.set(m.workerId, session);
    this.lastRegistrationAt = this.clock.now();
    this.deps.events.registered(session);
    this.log.info(
      { workerId: m.workerId, session: session.session, slots: m.slotCount },
      `worker registered: ${m.workerId} (session ${session.session}, ${m.slotCount} slots, data host ${m.dataHost})`,
    );
    conn.start({
      onRead: (msg) => {
        session.lastSeen = this.clock.now();
        if (msg.type !== 'Heartbeat') return false;
        if (msg.leaving) {
          this.log.info({ workerId: session.id, session: session.session }, `worker retired: ${session.id} (shutdown)`);
          this.retire(session, 'shutdown');
          return true;
        }
        this.deps.events.progress(session, msg);
        this.post(session, makeMessage('HeartbeatAck', { seq: msg.seq }));
        return true;
      },
      onMessage: (msg) => this.deps.events.frame(session, msg),
    });
  }

  /**
   * Set a replaced session aside. Its connection is read to its end first (bounded by the heartbeat
   * timeout): what the worker sent on it before it registered again (a clean SubtaskFinished, a
   * checkpoint ack) may still be in flight, and counts. Then its outbox is aborted and its unfinished
   * subtasks fold like a lost worker's.
   */
  retire(s: WorkerSession, why: string): void {
    s.state = 'retiring';
    this.retired.add(s);
    if (this.sessions.get(s.id) === s) this.sessions.delete(s.id);
    const ended = s.conn.closed.then(() => s.conn.drained());
    void boundedWait(ended, this.config.heartbeatTimeoutMs, this.clock).then(() => this.lose(s, why, 'retired'));
  }

  /** Post a frame to a worker, stamped with this coordinator's epoch. Never waits on the worker. */
  post(s: WorkerSession, m: Message, cls: 'control' | 'bulk' = 'control'): void {
    const stamped = 'epoch' in m ? ({ ...m, epoch: this.config.epoch } as Message) : m;
    const r = s.outbox.postEncoded(() => encodeFrame(stamped), cls);
    if (r === 'refused')
      this.log.warn(
        { workerId: s.id, type: m.type },
        `${m.type} to worker ${s.id} refused: its outbox is ${s.outbox.state}`,
      );
  }

  /** Every live session as the API shows it: what runs on it (of `jobs`) and how its previous session ended. */
  views(now: number, jobs: readonly JobState[]): WorkerView[] {
    const running = jobs.flatMap((j) =>
      j.subtasks
        .filter((t) => !t.finished)
        .map((t) => ({ session: t.session, key: `${j.id}/${subtaskKey(t.taskId, t.index)}` })),
    );
    return [...this.sessions.values()]
      .filter((s) => s.state === 'active')
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((s) =>
        workerView(
          s,
          now,
          this.departed.findLast((d) => d.workerId === s.id),
          running.filter((r) => r.session === s).map((r) => r.key),
        ),
      );
  }

  /** The watchdog's verdicts on every active session at `now`. */
  judge(now: number): void {
    const { heartbeatTimeoutMs: hb, outboundStallTimeoutMs: stall } = this.config;
    const stallOn = stall > 0 && Number.isFinite(stall);
    for (const s of [...this.sessions.values()]) {
      if (s.state !== 'active') continue;
      const stopped = s.outbox.stopped;
      if (stopped?.byItself) {
        this.deps.metrics.workersLost.inc({ verdict: 'overflow' });
        this.lose(s, `outbound queue stopped (${stopped.reason}): ${stopped.detail}`);
      } else if (now - s.lastSeen > hb) {
        this.deps.metrics.workersLost.inc({ verdict: 'silence' });
        this.lose(s, 'heartbeat timeout');
      } else if (stallOn && s.outbox.stalledForMs(now) > stall) {
        this.deps.metrics.workersLost.inc({ verdict: 'stall' });
        this.lose(
          s,
          `no outbound progress for ${s.outbox.stalledForMs(now)} ms with ${s.outbox.queuedFrames + 1} frames pending`,
        );
      }
    }
  }

  /** After a pause of the whole process nothing could be read or written: every session's clocks start again. */
  restartClocks(now: number): void {
    for (const s of this.sessions.values()) {
      s.lastSeen = now;
      s.outbox.restartStallClock();
    }
  }

  /** Declare a session lost (or its retirement done): abort its outbox, close it, and hand its subtasks' loss to the coordinator. */
  lose(s: WorkerSession, cause: string, state: 'lost' | 'retired' = 'lost'): void {
    if (s.state !== 'active' && s.state !== 'retiring') return;
    s.state = state;
    s.lostCause = cause;
    this.departed.push({ workerId: s.id, session: s.session, state, cause, at: this.clock.now() });
    if (this.departed.length > DEPARTED_LISTED) this.departed.shift();
    if (state === 'lost') {
      this.watchdogLog.warn({ workerId: s.id, session: s.session }, `worker lost: ${s.id} (${cause})`);
      if (this.sessions.get(s.id) === s) this.sessions.delete(s.id);
    }
    s.outbox.abort(`worker ${state}: ${s.id} (${cause})`);
    s.conn.close();
    this.deps.events.gone(s, `worker ${state}: ${s.id} (${cause})`);
  }

  /** Flush every active session's outbox against one deadline, then close every connection. */
  async flushAndClose(flushTimeoutMs: number): Promise<void> {
    const deadline = this.clock.now() + flushTimeoutMs;
    await Promise.all(this.active().map((s) => s.outbox.flush(Math.max(0, deadline - this.clock.now()))));
    for (const s of this.sessions.values()) s.conn.close();
    for (const s of this.retired) s.conn.close();
  }
}
