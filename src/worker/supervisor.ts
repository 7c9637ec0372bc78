/**
 * WorkerSupervisor: what `clink node --role=worker` runs. A Worker is one session with the
 * coordinator and ends with its connection; the supervisor outlives sessions. When one ends it has
 * already cancelled its tasks; the supervisor waits for them to drain (close), then registers a fresh
 * session under the same id, with exponential backoff and full jitter. A retryable refusal is tried
 * again; an incompatible protocol is not.
 */
import { RECONNECT_DEFAULTS, WORKER_DEFAULTS } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { EnvironmentError } from '../errors.js';
import { WrongProtocolError } from '../net/index.js';
import { ProtocolVersionError } from '../protocol/index.js';
import { RegistrationRefusedError, Worker, type WorkerConfig, type WorkerDeps } from './worker.js';
import { systemClock, type Clock } from '../util/index.js';

export interface ReconnectPolicy {
  /** @default 100 */
  initialBackoffMs: number;
  /** @default 5,000 */
  maxBackoffMs: number;
}

/**
 * HA: where the leader is, read before every session (a file election's leader record, or etcd). A
 * session is then opened with the leader it names, and one whose epoch is below the highest this
 * worker has admitted (a superseded leader, or an unfenced epoch-0 coordinator) is refused and retried.
 */
export interface LeaderDiscovery {
  readonly describe: string;
  current(): Promise<{ host: string; port: number; epoch: number } | undefined>;
}

/** How often a worker between sessions looks for a newly announced leader (HA). */
export const LEADER_WATCH_MS = 100;

export const DEFAULT_RECONNECT_POLICY: Readonly<ReconnectPolicy> = RECONNECT_DEFAULTS;

/**
 * The wait before registration attempt `attempt + 1` (0-based `attempt` failed): full jitter, anywhere
 * from 0 to the capped exponential; `random` is in [0, 1).
 */
export function reconnectDelayMs(policy: ReconnectPolicy, attempt: number, random: number): number {
  const cap = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** Math.min(attempt, 30));
  return random * cap;
}

/** Why the supervisor stopped for good. */
export type SupervisorEnd = { reason: 'closed' } | { reason: 'incompatible'; detail: string };

/** A worker node's own view of itself (GET /api/v1/worker). */
export interface WorkerStatus {
  workerId: string;
  state: 'connected' | 'reconnecting' | 'closing';
  session: number;
  epoch: number;
  coordinator: string;
  dataPort: number;
  /** The data ports its job threads listen on: where the subtasks they run take channels. */
  jobDataPorts: number[];
  slots: number;
  lastError: { message: string; at: number } | null;
}

export class WorkerSupervisor {
  private current: Worker | undefined;
  private closing = false;
  private wake: (() => void) | undefined;
  private readonly log: Logger;
  /** The highest coordinator epoch any session of this worker has admitted. */
  private highestEpoch = 0;
  readonly ended: Promise<SupervisorEnd>;
  private resolveEnded!: (e: SupervisorEnd) => void;
  private readonly clock: Clock;

  private constructor(
    readonly config: WorkerConfig,
    private readonly deps: WorkerDeps,
    private readonly policy: ReconnectPolicy,
    private readonly leader?: LeaderDiscovery,
  ) {
    this.log = deps.log.child({ component: 'worker.supervisor', workerId: config.id });
    this.clock = deps.clock ?? systemClock;
    this.ended = new Promise((r) => (this.resolveEnded = r));
  }

  /**
   * Register the first session (retrying like any later one), then keep the worker connected until
   * close(). Throws only when the coordinator's protocol is incompatible.
   */
  static async start(
    config: WorkerConfig,
    deps: WorkerDeps,
    policy: Partial<ReconnectPolicy> = {},
    onSession?: (w: Worker) => void | Promise<void>,
  ): Promise<WorkerSupervisor> {
    const s = new WorkerSupervisor(config, deps, { ...DEFAULT_RECONNECT_POLICY, ...policy });
    s.onSession = onSession;
    const first = await s.connect();
    if (!first) throw new Error('closed before the first session registered');
    void s.supervise(first);
    return s;
  }

  /**
   * Start supervising without waiting for the first session: a node that has never reached its
   * coordinator must still stop on a signal. `ended` settles 'incompatible' when the first attempt
   * meets a peer it can never join (another protocol version, a port that speaks HTTP).
   */
  static launch(
    config: WorkerConfig,
    deps: WorkerDeps,
    policy: Partial<ReconnectPolicy> = {},
    onSession?: (w: Worker) => void | Promise<void>,
    leader?: LeaderDiscovery,
  ): WorkerSupervisor {
    const s = new WorkerSupervisor(config, deps, { ...DEFAULT_RECONNECT_POLICY, ...policy }, leader);
    s.onSession = onSession;
    void s.connect().then(
      (first) => (first ? s.supervise(first) : s.resolveEnded({ reason: 'closed' })),
      (err: unknown) => s.resolveEnded({ reason: 'incompatible', detail: (err as Error).message }),
    );
    return s;
  }

  /** Told of each session once it has registered (each has a data port of its own). */
  private onSession: ((w: Worker) => void | Promise<void>) | undefined;

  /** The session now connected, if any. */
  get worker(): Worker | undefined {
    return this.current;
  }

  get connected(): boolean {
    return this.current !== undefined;
  }

  /** The last thing that went wrong with the control connection (a refused registration, a lost coordinator). */
  private lastError: { message: string; at: number } | undefined;

  /** What GET /api/v1/worker shows: this worker's session with the coordinator, and the last error. */
  describe(): WorkerStatus {
    const w = this.current;
    return {
      workerId: this.config.id,
      state: w ? 'connected' : this.closing ? 'closing' : 'reconnecting',
      session: w?.session ?? 0,
      epoch: w?.epoch ?? 0,
      coordinator: w ? `${w.config.coordinatorHost}:${w.config.coordinatorPort}` : '',
      dataPort: w?.dataPort ?? 0,
      jobDataPorts: w?.jobDataPorts ?? [],
      slots: this.config.slots ?? WORKER_DEFAULTS.slots,
      lastError: this.lastError ?? null,
    };
  }

  /** One session after another, until close() or an incompatible coordinator. */
  private async supervise(first: Worker): Promise<void> {
    let w: Worker | undefined = first;
    while (w && !this.closing) {
      const end = await w.ended;
      // The session may have re-bound to a higher epoch (a failover that kept the connection).
      this.highestEpoch = Math.max(this.highestEpoch, w.epoch);
      if (this.closing) break;
      this.current = undefined;
      this.deps.metrics.workerControlConnected.set(0);
      this.deps.metrics.workerControlDisconnects.inc();
      this.log.warn(
        `lost the coordinator (${end.reason === 'disconnected' ? end.detail : end.reason}); draining this session's tasks, then reconnecting`,
      );
      this.lastError = {
        message: `lost the coordinator (${end.reason === 'disconnected' ? end.detail : end.reason})`,
        at: this.clock.now(),
      };
      // The next session never starts before the old one has drained.
      await w.close();
      try {
        w = await this.connect(true);
      } catch (err) {
        this.resolveEnded({ reason: 'incompatible', detail: (err as Error).message });
        return;
      }
    }
    this.resolveEnded({ reason: 'closed' });
  }

  /** Register a session, retrying with backoff; undefined when closed meanwhile. Throws on an incompatible protocol. */
  private async connect(reconnect = false): Promise<Worker | undefined> {
    for (let attempt = 0; !this.closing; attempt++) {
      this.deps.metrics.workerControlAttempts.inc();
      try {
        const w = await Worker.start(await this.sessionConfig(), this.deps);
        if (this.closing) {
          await w.close();
          return undefined;
        }
        if (w.epoch < this.highestEpoch) {
          await w.close();
          throw new Error(
            `the coordinator at ${w.config.coordinatorHost}:${w.config.coordinatorPort} answered with epoch ${w.epoch}, below epoch ${this.highestEpoch} this worker has admitted (a superseded${w.epoch === 0 ? ' or unfenced' : ''} coordinator)`,
          );
        }
        this.highestEpoch = w.epoch;
        this.current = w;
        this.deps.metrics.workerControlConnected.set(1);
        // Counted with the session, before anything else can observe it connected.
        if (reconnect) this.deps.metrics.workerControlReconnects.inc();
        // A failing callback (the ready file cannot be written) costs a log line, not the session.
        const told = (): Promise<void> =>
          (async () => this.onSession?.(w))().catch((err: unknown) =>
            this.log.error({ err }, `after registering: ${(err as Error).message}`),
          );
        // Its job threads' data ports come and go within the session: told again as they do.
        w.onDataPorts = () => void told();
        await told();
        return w;
      } catch (err) {
        // Retrying cannot help: another protocol, a port that speaks HTTP, an address not on this machine.
        if (err instanceof ProtocolVersionError || err instanceof WrongProtocolError || err instanceof EnvironmentError)
          throw err;
        if (err instanceof RegistrationRefusedError && !err.retryable) throw err;
        const delay = reconnectDelayMs(this.policy, attempt, (this.deps.random ?? Math.random)());
        this.lastError = {
          message: `cannot register with the coordinator (${(err as Error).message})`,
          at: this.clock.now(),
        };
        this.log.info(
          { attempt: attempt + 1, delayMs: Math.round(delay) },
          `cannot register with the coordinator (${(err as Error).message}); retrying in ${Math.round(delay)} ms`,
        );
        const seen = await this.announced();
        if (this.closing) break;
        await new Promise<void>((r) => {
          const done = (): void => {
            cancel?.();
            stopWatch();
            r();
          };
          const cancel = this.clock.after(delay, done);
          const stopWatch = this.watchLeader(seen, () => this.wake?.());
          this.wake = done;
        });
        this.wake = undefined;
      }
    }
    return undefined;
  }

  /** The leader announced now, as a key (`host:port@epoch`); '' without HA or when none is. */
  private async announced(): Promise<string> {
    const l = await this.leader?.current().catch(() => undefined);
    return l ? `${l.host}:${l.port}@${l.epoch}` : '';
  }

  /**
   * HA: while backing off, look at the announced leader every LEADER_WATCH_MS and cut the wait short
   * when another is announced, so a takeover is joined as soon as it is announced, not a backoff later.
   * Returns the stop.
   */
  private watchLeader(seen: string, changed: () => void): () => void {
    if (!this.leader) return () => undefined;
    return this.clock.every(LEADER_WATCH_MS, () => {
      void this.announced().then((now) => {
        if (now !== '' && now !== seen) changed();
      });
    });
  }

  /** The config of the next session: with HA, pointed at the leader now announced (never one below the highest epoch admitted). */
  private async sessionConfig(): Promise<WorkerConfig> {
    if (!this.leader) return this.config;
    const l = await this.leader.current();
    if (!l) throw new Error(`no leader is announced in ${this.leader.describe} yet`);
    if (l.epoch < this.highestEpoch)
      throw new Error(
        `the leader announced in ${this.leader.describe} (${l.host}:${l.port}) has epoch ${l.epoch}, below epoch ${this.highestEpoch} this worker has admitted`,
      );
    return { ...this.config, coordinatorHost: l.host, coordinatorPort: l.port };
  }

  /** Stop reconnecting, and close the current session (cancelling its tasks). */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.wake?.();
    const w = this.current;
    this.current = undefined;
    this.deps.metrics.workerControlConnected.set(0);
    await w?.close({ leaving: true });
    this.resolveEnded({ reason: 'closed' });
  }
}
