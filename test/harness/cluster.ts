/**
 * ClusterHarness: a real coordinator and real worker processes on loopback, ephemeral ports and a temp
 * dir; the test process talks to them as a client and over HTTP. close() ends every process it started
 * (SIGTERM, then SIGKILL) and removes the temp dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterClient, type CheckpointSettings } from '../../src/client/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { PATIENCE_MS } from '../helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = join(ROOT, 'node_modules/tsx/dist/esm/index.mjs');
const BIN = join(ROOT, 'src/cli/bin.ts');

export interface NodeProcess {
  name: string;
  child: ChildProcess;
  /** Parsed JSON log lines so far. */
  logs: Record<string, unknown>[];
  stdout: string;
  exited: Promise<number | null>;
  /** The node's HTTP port, once its ready file is in (0: none). */
  httpPort: number;
  /** Where it writes its ready file. */
  readyFile?: string;
}

export interface HarnessOptions {
  workers: number;
  slots?: number;
  coordinatorArgs?: string[];
  workerArgs?: string[];
  /** Extra environment for worker processes (test hooks). */
  workerEnv?: Record<string, string>;
  /**
   * High availability: this many coordinators stand for leadership (file lock in `<dir>/ha`, or etcd at
   * `etcd` under a cluster name of its own); workers find the leader the same way.
   */
  ha?: { coordinators: number; etcd?: string; leaseTtlS?: number };
  /** How the test's clients connect (TLS, a token). */
  client?: Parameters<typeof ClusterClient.connect>[2];
}

export class ClusterHarness {
  readonly nodes: NodeProcess[] = [];
  coordinator!: NodeProcess;
  controlPort = 0;
  httpPort = 0;
  private readonly clients: ClusterClient[] = [];
  private workerSeq = 0;

  private constructor(
    readonly dir: string,
    private readonly options: HarnessOptions,
  ) {}

  /** Every coordinator started (HA: the leader and its standbys). */
  readonly coordinators: NodeProcess[] = [];

  static async start(options: HarnessOptions): Promise<ClusterHarness> {
    const h = new ClusterHarness(await mkdtemp(join(tmpdir(), 'clink-cluster-')), options);
    try {
      if (options.ha) {
        for (let i = 0; i < options.ha.coordinators; i++) h.standCoordinator();
        await h.waitForLeader();
      } else await h.startCoordinator(0);
      for (let i = 0; i < options.workers; i++) await h.addWorker();
      await h.waitForWorkers(options.workers);
    } catch (err) {
      await h.close();
      throw err;
    }
    return h;
  }

  private async startCoordinator(port: number): Promise<void> {
    const ready = join(this.dir, `coordinator-${this.nodes.length}.json`);
    this.coordinator = this.spawnNode('coordinator', [
      '--role=coordinator',
      `--port=${port}`,
      '--http-port=0',
      `--ready-file=${ready}`,
      ...this.coordinatorArgs(),
    ]);
    const r = JSON.parse(await this.waitForFile(ready)) as { controlPort: number; httpPort: number };
    this.controlPort = r.controlPort;
    this.httpPort = this.coordinator.httpPort = r.httpPort;
  }

  /**
   * A coordinator's flags: a submit waits for slots (a worker a busy machine delayed past its heartbeat
   * timeout registers again) and for its connectors' servers to answer (a broker on a busy machine can
   * take longer than the default 5 s to serve metadata) unless the test says otherwise; then the test's own.
   */
  private coordinatorArgs(): string[] {
    return [
      `--submit-wait-for-slots-ms=${PATIENCE_MS}`,
      `--connector-check-timeout-ms=${PATIENCE_MS}`,
      ...(this.options.coordinatorArgs ?? []),
    ];
  }

  /** The flags that point a node at the HA election (a coordinator stands in it, a worker follows it). */
  haArgs(): string[] {
    const ha = this.options.ha!;
    return ha.etcd
      ? [`--etcd-endpoints=${ha.etcd}`, `--etcd-cluster=${basename(this.dir)}`, `--ha-dir=${join(this.dir, 'ha')}`]
      : [`--ha-dir=${join(this.dir, 'ha')}`];
  }

  /** Start one more HA coordinator (it stands by until elected). */
  standCoordinator(): NodeProcess {
    const ready = join(this.dir, `coordinator-${this.nodes.length}.json`);
    const leaseTtl = this.options.ha?.leaseTtlS ? [`--etcd-lease-ttl-s=${this.options.ha.leaseTtlS}`] : [];
    const node = this.spawnNode(`coordinator-${this.coordinators.length}`, [
      '--role=coordinator',
      '--port=0',
      '--http-port=0',
      `--ready-file=${ready}`,
      ...this.haArgs(),
      ...leaseTtl,
      ...this.coordinatorArgs(),
    ]);
    node.readyFile = ready;
    this.coordinators.push(node);
    return node;
  }

  /**
   * Wait until a coordinator (other than `not`) says it leads in its ready file; it becomes the one this
   * harness talks to. Returns it and its epoch.
   */
  async waitForLeader(not?: NodeProcess, timeoutMs = PATIENCE_MS): Promise<{ leader: NodeProcess; epoch: number }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const c of this.coordinators) {
        if (
          c === not ||
          c.child.exitCode !== null ||
          c.child.signalCode !== null ||
          !c.readyFile ||
          !existsSync(c.readyFile)
        )
          continue;
        const r = JSON.parse(await readFile(c.readyFile, 'utf8').catch(() => '{}')) as {
          state?: string;
          controlPort?: number;
          httpPort?: number;
          epoch?: number;
        };
        if (r.state !== 'leader' || !r.controlPort) continue;
        this.coordinator = c;
        this.controlPort = r.controlPort;
        this.httpPort = r.httpPort ?? 0;
        c.httpPort = this.httpPort;
        return { leader: c, epoch: r.epoch ?? 0 };
      }
      if (Date.now() > deadline)
        throw new Error(
          `no coordinator led within ${timeoutMs} ms: ${JSON.stringify(this.coordinators.map((c) => c.logs.slice(-3).map((l) => l.msg)))}`,
        );
      await sleep(20);
    }
  }

  /** kill -9 the coordinator, then start a new one on the same control port (workers are left alone). */
  async restartCoordinator(): Promise<void> {
    const old = this.coordinator;
    old.child.kill('SIGKILL');
    await old.exited;
    await this.startCoordinator(this.controlPort);
  }

  spawnNode(name: string, args: string[], env: Record<string, string> = {}): NodeProcess {
    const child = spawn(process.execPath, ['--import', TSX, BIN, 'node', ...args], {
      cwd: this.dir,
      env: {
        ...process.env,
        CLINK_LOG_LEVEL: 'info',
        CLINK_CACHE_DIR: join(this.dir, `cache-${name}-${this.nodes.length}`),
        ...env,
      },
      // The IPC channel ends the node when this process dies, even by a test timeout's kill.
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const node: NodeProcess = {
      name,
      child,
      logs: [],
      stdout: '',
      exited: new Promise((r) => child.once('exit', (code) => r(code))),
      httpPort: 0,
    };
    let partial = '';
    child.stderr!.on('data', (d: Buffer) => {
      partial += d.toString();
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const l of lines) {
        try {
          node.logs.push(JSON.parse(l) as Record<string, unknown>);
        } catch {
          node.logs.push({ msg: l });
        }
      }
    });
    child.stdout!.on('data', (d: Buffer) => (node.stdout += d.toString()));
    this.nodes.push(node);
    return node;
  }

  /** Start one more worker process; resolves once it has written its ready file. */
  async addWorker(extraArgs: string[] = [], id = `w${++this.workerSeq}`): Promise<NodeProcess> {
    const ready = join(this.dir, `${id}-${this.nodes.length}.json`);
    const node = this.spawnNode(
      id,
      [
        '--role=worker',
        `--id=${id}`,
        ...(this.options.ha ? this.haArgs() : [`--coordinator-port=${this.controlPort}`]),
        `--slots=${this.options.slots ?? 2}`,
        `--ready-file=${ready}`,
        '--http-port=0',
        ...(this.options.workerArgs ?? []),
        ...extraArgs,
      ],
      this.options.workerEnv,
    );
    node.httpPort = (JSON.parse(await this.waitForFile(ready, node)) as { httpPort: number }).httpPort;
    node.readyFile = ready;
    return node;
  }

  /** The newest process started for worker `id`. */
  worker(id: string): NodeProcess {
    return this.nodes.filter((n) => n.name === id).at(-1)!;
  }

  private async waitForFile(
    path: string,
    node: NodeProcess = this.coordinator,
    timeoutMs = PATIENCE_MS,
  ): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!existsSync(path)) {
      if (node.child.exitCode !== null)
        throw new Error(`${node.name} exited with ${node.child.exitCode}: ${JSON.stringify(node.logs.slice(-5))}`);
      if (Date.now() > deadline) throw new Error(`${node.name} did not write ${path} within ${timeoutMs} ms`);
      await sleep(20);
    }
    return readFile(path, 'utf8');
  }

  /** A request to the coordinator's HTTP API (or, with `port`, another node's); a JSON `body` is sent as such. */
  async http<T = unknown>(
    path: string,
    init: { method?: string; body?: unknown; port?: number } = {},
  ): Promise<{ status: number; body: T; text: string }> {
    const res = await fetch(`http://127.0.0.1:${init.port ?? this.httpPort}${path}`, {
      method: init.method ?? 'GET',
      ...(init.body !== undefined
        ? { body: JSON.stringify(init.body), headers: { 'content-type': 'application/json' } }
        : {}),
    });
    const text = await res.text();
    let body: T;
    try {
      body = JSON.parse(text) as T;
    } catch {
      body = undefined as T;
    }
    return { status: res.status, body, text };
  }

  /** The value of a counter summed over label sets matching `labels`, from a node's /metrics. */
  async workerMetric(node: NodeProcess, name: string, labels: Record<string, string> = {}): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text();
    let sum = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
      if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sum;
  }

  async waitForWorkers(n: number, timeoutMs = PATIENCE_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await this.http<{ workers: unknown[] }>('/api/v1/workers');
      if (body.workers.length === n) return;
      if (Date.now() > deadline) throw new Error(`expected ${n} workers, have ${body.workers.length}`);
      await sleep(25);
    }
  }

  async client(): Promise<ClusterClient> {
    const c = await ClusterClient.connect('127.0.0.1', this.controlPort, { name: 'test', ...this.options.client });
    this.clients.push(c);
    return c;
  }

  /** Submit a job file through a client; returns its id, the client (to wait on) and the bytes uploaded. */
  async submit(
    jobFile: string,
    o: {
      parallelism?: number;
      params?: Record<string, string>;
      client?: ClusterClient;
      checkpoint?: Partial<CheckpointSettings>;
    } = {},
  ): Promise<{ jobId: string; client: ClusterClient; uploadedBytes: number; moduleBytes: number }> {
    const loaded = await loadJobModule(jobFile, { cacheDir: join(this.dir, 'cache-client') });
    const params = o.params ?? {};
    const built = buildJob(loaded.job, { parallelism: o.parallelism ?? 1, params });
    const client = o.client ?? (await this.client());
    const { jobId, uploadedBytes } = await client.submit({
      module: loaded,
      spec: built.spec,
      params,
      buildParallelism: o.parallelism ?? 1,
      ...(o.checkpoint ? { checkpoint: o.checkpoint } : {}),
    });
    return { jobId, client, uploadedBytes, moduleBytes: loaded.code.length + loaded.sourceMap.length };
  }

  /** A counter from the coordinator's /metrics. */
  async metric(name: string): Promise<number> {
    const line = (await this.http('/metrics')).text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) : 0;
  }

  /** Wait for a log line of `node` whose msg matches; returns it. */
  async waitForLog(node: NodeProcess, pattern: RegExp, timeoutMs = PATIENCE_MS): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = node.logs.find((l) => pattern.test(String(l.msg)));
      if (line) return line;
      if (Date.now() > deadline)
        throw new Error(
          `${node.name} logged nothing matching ${pattern} within ${timeoutMs} ms; last: ${JSON.stringify(node.logs.slice(-5).map((l) => l.msg))}`,
        );
      await sleep(20);
    }
  }

  async waitForJob<T extends { state: string }>(jobId: string, states: string[], timeoutMs = PATIENCE_MS): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body, status } = await this.http<T>(`/api/v1/jobs/${jobId}`);
      if (status === 200 && states.includes(body.state)) return body;
      if (Date.now() > deadline)
        throw new Error(`job ${jobId} not in ${states.join('/')} within ${timeoutMs} ms: ${JSON.stringify(body)}`);
      await sleep(25);
    }
  }

  /** Stop every process (SIGTERM, SIGKILL after 5 s) and remove the temp dir. */
  async close(): Promise<void> {
    for (const c of this.clients) c.close();
    const alive = this.nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
    for (const n of alive) n.child.kill('SIGTERM');
    const forced = setTimeout(() => alive.forEach((n) => n.child.kill('SIGKILL')), 5_000);
    await Promise.all(alive.map((n) => n.exited));
    clearTimeout(forced);
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Whether a process with this pid is still running. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
