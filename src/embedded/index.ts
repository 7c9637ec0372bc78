/**
 * EmbeddedCluster: a coordinator in this process and N workers, as child processes (or, with 0, one
 * worker in this process). `clink run` submits through it, so a local run takes the same path as a
 * cluster run and uses every core.
 *
 * @example
 * const cluster = await EmbeddedCluster.start({ workers: 2, slotsPerWorker: 4, log });
 * const client = await cluster.client();
 * await cluster.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Coordinator } from '../coordinator/index.js';
import { ClusterClient } from '../client/index.js';
import type { Logger } from '../log/index.js';
import { ClinkMetrics } from '../metrics/index.js';
import { Worker, type TaskIsolation } from '../worker/index.js';
import type { DataTransport } from '../dataplane/index.js';
import { ClinkError } from '../errors.js';
import { loadTlsClient, loadTlsServer } from '../net/index.js';

export interface EmbeddedClusterOptions {
  /** Worker processes to start; 0 runs one worker in this process. */
  workers: number;
  slotsPerWorker: number;
  log: Logger;
  /** How long the workers may take to register. @default 20,000 */
  startTimeoutMs?: number;
  /** The command line that starts this CLI (for worker processes). @default this process's own */
  cliCommand?: { execPath: string; args: string[] };
  /** @default 1000 */
  batchSize?: number;
  /** @default 0 */
  batchLingerMs?: number;
  /** Buffer debloating's target (see WorkerConfig.debloatTargetMs). @default 0, off */
  debloatTargetMs?: number;
  /** Where the workers run user code (see WorkerConfig.taskIsolation). @default 'thread' */
  taskIsolation?: TaskIsolation;
  /** A job thread that makes no progress this long is terminated (see WorkerConfig.taskStallTimeoutMs). @default 30,000 */
  taskStallTimeoutMs?: number;
  /** The heap limit of each job thread (see WorkerConfig.taskHeapMb). @default 2,048 */
  taskHeapMb?: number;
  /** Where jobs on the disk state backend keep their stores (see WorkerConfig.localStateDir). */
  localStateDir?: string;
  /** How the workers' channels to each other travel (see WorkerConfig.dataTransport). @default 'link' */
  dataTransport?: DataTransport;
  /** Slot sharing (see CoordinatorConfig.slotSharing). @default true */
  slotSharing?: boolean;
  /**
   * mTLS everywhere, one certificate for every node (it must name 127.0.0.1) and `ca` for all of them:
   * the control port, the workers' data ports and the clients. Worker processes only.
   */
  tls?: { ca: string; cert: string; key: string };
}

/** A local worker process that dies is started again after this long, doubling while it keeps dying, up to 5 s. */
const RESPAWN_INITIAL_BACKOFF_MS = 250;
const RESPAWN_MAX_BACKOFF_MS = 5_000;

export class EmbeddedCluster {
  /** The current process of each local worker, by index. */
  private readonly children: ChildProcess[] = [];
  private inProcess: Worker | undefined;
  private stopping = false;
  private readonly respawns: { count: number; timer?: NodeJS.Timeout }[] = [];
  /** Local worker processes started again after they died. */
  restarts = 0;
  private readonly clients: ClusterClient[] = [];

  private constructor(
    readonly coordinator: Coordinator,
    private readonly options: EmbeddedClusterOptions,
    /** The coordinator's metrics. */
    readonly metrics: ClinkMetrics,
  ) {}

  static async start(options: EmbeddedClusterOptions): Promise<EmbeddedCluster> {
    const metrics = new ClinkMetrics();
    const tls =
      options.tls && (await loadTlsServer({ cert: options.tls.cert, key: options.tls.key, clientCa: options.tls.ca }));
    const coordinator = await Coordinator.start(
      { port: 0, slotSharing: options.slotSharing ?? true },
      { log: options.log, metrics, ...(tls ? { tls } : {}) },
    );
    const cluster = new EmbeddedCluster(coordinator, options, metrics);
    try {
      await cluster.startWorkers();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  private async startWorkers(): Promise<void> {
    const { workers, slotsPerWorker, log } = this.options;
    if (workers === 0) {
      this.inProcess = await Worker.start(
        {
          id: 'local-0',
          coordinatorPort: this.coordinator.port,
          slots: slotsPerWorker,
          batchSize: this.options.batchSize,
          batchLingerMs: this.options.batchLingerMs,
          debloatTargetMs: this.options.debloatTargetMs,
          taskIsolation: this.options.taskIsolation,
          taskStallTimeoutMs: this.options.taskStallTimeoutMs,
          ...(this.options.taskHeapMb !== undefined ? { taskHeapMb: this.options.taskHeapMb } : {}),
          ...(this.options.localStateDir !== undefined ? { localStateDir: this.options.localStateDir } : {}),
          dataTransport: this.options.dataTransport,
        },
        { log, metrics: new ClinkMetrics() },
      );
      return;
    }
    for (let i = 0; i < workers; i++) this.spawnWorker(i);
    const deadline = Date.now() + (this.options.startTimeoutMs ?? 20_000);
    while (this.coordinator.workers().length < workers) {
      const dead = this.children.find((c) => c.exitCode !== null || c.signalCode !== null);
      if (dead)
        throw new ClinkError(
          'CLINK_ERR_WORKER_LOST',
          `a local worker process exited (${dead.exitCode ?? dead.signalCode}) before registering`,
        );
      if (Date.now() > deadline)
        throw new ClinkError(
          'CLINK_ERR_WORKER_LOST',
          `${workers} local workers did not register within ${this.options.startTimeoutMs ?? 20_000} ms`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Start local worker `i` (again). A worker process that dies while the cluster runs is this cluster's
   * to restart, as a process supervisor would: it registers again under the same id.
   */
  private spawnWorker(i: number): void {
    const { slotsPerWorker } = this.options;
    const cli = this.options.cliCommand ?? {
      execPath: process.execPath,
      args: [...process.execArgv, process.argv[1]!],
    };
    const child = spawn(
      cli.execPath,
      [
        ...cli.args,
        'node',
        '--role=worker',
        `--id=local-${i}`,
        `--coordinator-port=${this.coordinator.port}`,
        `--slots=${slotsPerWorker}`,
        ...(this.options.batchSize !== undefined ? [`--batch-size=${this.options.batchSize}`] : []),
        ...(this.options.batchLingerMs !== undefined ? [`--batch-linger-ms=${this.options.batchLingerMs}`] : []),
        ...(this.options.debloatTargetMs !== undefined ? [`--debloat-target-ms=${this.options.debloatTargetMs}`] : []),
        ...(this.options.taskIsolation ? [`--task-isolation=${this.options.taskIsolation}`] : []),
        ...(this.options.taskStallTimeoutMs !== undefined
          ? [`--task-stall-timeout-ms=${this.options.taskStallTimeoutMs}`]
          : []),
        ...(this.options.taskHeapMb !== undefined ? [`--task-heap-mb=${this.options.taskHeapMb}`] : []),
        ...(this.options.localStateDir !== undefined ? [`--local-state-dir=${this.options.localStateDir}`] : []),
        ...(this.options.dataTransport ? [`--data-transport=${this.options.dataTransport}`] : []),
        ...(this.options.tls
          ? [
              `--tls-ca=${this.options.tls.ca}`,
              `--tls-cert=${this.options.tls.cert}`,
              `--tls-key=${this.options.tls.key}`,
              `--tls-client-cert=${this.options.tls.cert}`,
              `--tls-client-key=${this.options.tls.key}`,
            ]
          : []),
      ],
      // The IPC channel ends the worker when this process dies, however it dies.
      {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: { ...process.env, CLINK_LOG_LEVEL: process.env.CLINK_LOG_LEVEL ?? 'error' },
      },
    );
    this.children[i] = child;
    const state = (this.respawns[i] ??= { count: 0 });
    const startedAt = Date.now();
    child.once('exit', (code, signal) => {
      if (this.stopping || this.children[i] !== child) return;
      // Dying again soon after a start doubles the wait; a worker that ran a while starts from the first.
      state.count = Date.now() - startedAt > 10 * RESPAWN_MAX_BACKOFF_MS ? 1 : state.count + 1;
      const delay = Math.min(RESPAWN_MAX_BACKOFF_MS, RESPAWN_INITIAL_BACKOFF_MS * 2 ** (state.count - 1));
      this.options.log.warn(
        { workerId: `local-${i}`, code, signal, delayMs: delay },
        `local worker local-${i} exited (${signal ?? `code ${code}`}); starting it again in ${delay} ms`,
      );
      state.timer = setTimeout(() => {
        if (this.stopping) return;
        this.restarts++;
        this.spawnWorker(i);
      }, delay);
    });
  }

  /** The process ids of the worker processes (none with an in-process worker). */
  workerPids(): number[] {
    return this.children.map((c) => c.pid!).filter((p) => p !== undefined);
  }

  /** A client connected to this cluster's coordinator. */
  async client(): Promise<ClusterClient> {
    const t = this.options.tls;
    const tls = t && (await loadTlsClient({ ca: t.ca, clientCert: t.cert, clientKey: t.key }));
    const c = await ClusterClient.connect('127.0.0.1', this.coordinator.port, {
      name: 'clink-run',
      ...(tls ? { tls } : {}),
    });
    this.clients.push(c);
    return c;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const r of this.respawns) clearTimeout(r.timer);
    for (const c of this.clients) c.close();
    // A child killed by a signal has a null exitCode but a signalCode: it has exited too.
    const exits = this.children.map((c) =>
      c.exitCode !== null || c.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((r) => c.once('exit', () => r())),
    );
    for (const c of this.children) c.kill('SIGTERM');
    const forced = setTimeout(() => this.children.forEach((c) => c.kill('SIGKILL')), 3_000);
    await Promise.all(exits);
    clearTimeout(forced);
    await this.inProcess?.close();
    await this.coordinator.stop();
  }
}
