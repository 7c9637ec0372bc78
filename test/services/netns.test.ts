// Hosts, not just ports: a coordinator and two workers in network namespaces of their own, joined by
// veth pairs on a bridge, over mTLS with certificates made for their addresses. A one-way partition (a
// worker's packets to the coordinator blackholed) is caught by the heartbeat lease on both sides and the
// job restarts from its checkpoint, exactly once; a certificate that does not name the address dialled
// is refused with the documented message; loss and delay (netem) slow the job but lose nothing. Needs
// root and iproute2 (npm run test:services, as CI runs it); a kernel that refuses is a skip with why.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterClient } from '../../src/client/index.js';
import { loadTlsClient } from '../../src/net/index.js';
import { BIN, TSX } from '../harness/cli.js';
import { makeCerts, type CertFiles } from '../harness/certs.js';
import type { ClusterHarness } from '../harness/cluster.js';
import { submitSinkJob } from '../harness/file-sink-job.js';
import { visibleLines, waitFor } from '../helpers.js';

const tag = String(process.pid % 10_000);
const BRIDGE = `ckbr${tag}`;
const HOST_IP = '10.77.0.1';
const NODES = { c: '10.77.0.10', w1: '10.77.0.11', w2: '10.77.0.12' } as const;
type NodeName = keyof typeof NODES;
const ns = (n: NodeName): string => `clink-${n}-${tag}`;

const run = (args: string[]): { ok: boolean; err: string } => {
  const r = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  return { ok: r.status === 0, err: (r.stderr || r.error?.message || '').trim() };
};
const must = (args: string[]): void => {
  const r = run(args);
  if (!r.ok) throw new Error(`${args.join(' ')}: ${r.err}`);
};

/** Why the namespaces cannot be made here, or undefined when they were. */
/**
 * Remove what a run killed before its teardown left (its namespaces, and its bridge, which still holds
 * HOST_IP's subnet and would make this run's routes ambiguous). Only this test's names are touched.
 */
function removeStale(): void {
  const list = (args: string[]): string[] =>
    (spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' }).stdout ?? '').split('\n');
  for (const line of list(['ip', 'netns', 'list'])) {
    const name = /^(clink-(?:c|w1|w2)-\d+)\b/.exec(line)?.[1];
    if (name) run(['ip', 'netns', 'del', name]);
  }
  for (const line of list(['ip', '-o', 'link', 'show', 'type', 'bridge'])) {
    const name = /^\d+: (ckbr\d+)[:@]/.exec(line)?.[1];
    if (name) run(['ip', 'link', 'del', name]);
  }
}

function setUp(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  if (!run(['ip', '-V']).ok) return 'iproute2 (ip) is not installed';
  removeStale();
  const bridge = run(['ip', 'link', 'add', BRIDGE, 'type', 'bridge']);
  if (!bridge.ok) return `the kernel refused a bridge: ${bridge.err}`;
  must(['ip', 'addr', 'add', `${HOST_IP}/24`, 'dev', BRIDGE]);
  must(['ip', 'link', 'set', BRIDGE, 'up']);
  for (const [i, n] of (Object.keys(NODES) as NodeName[]).entries()) {
    const made = run(['ip', 'netns', 'add', ns(n)]);
    if (!made.ok) return `the kernel refused a network namespace: ${made.err}`;
    must(['ip', 'netns', 'exec', ns(n), 'ip', 'link', 'set', 'lo', 'up']);
    must(['ip', 'link', 'add', `ckh${i}${tag}`, 'type', 'veth', 'peer', 'name', `ckn${i}${tag}`]);
    must(['ip', 'link', 'set', `ckn${i}${tag}`, 'netns', ns(n)]);
    must(['ip', 'link', 'set', `ckh${i}${tag}`, 'master', BRIDGE, 'up']);
    must(['ip', 'netns', 'exec', ns(n), 'ip', 'addr', 'add', `${NODES[n]}/24`, 'dev', `ckn${i}${tag}`]);
    must(['ip', 'netns', 'exec', ns(n), 'ip', 'link', 'set', `ckn${i}${tag}`, 'up']);
  }
  return undefined;
}

function tearDown(): void {
  for (const n of Object.keys(NODES) as NodeName[]) run(['ip', 'netns', 'del', ns(n)]);
  run(['ip', 'link', 'del', BRIDGE]);
}

interface NsNode {
  child: ChildProcess;
  log: () => string;
  ready: () => Promise<{ controlPort: number; httpPort: number }>;
  stop: () => Promise<void>;
}

/** `clink node` in namespace `n`. */
function startNode(n: NodeName, dir: string, args: string[]): NsNode {
  const readyFile = join(dir, `ready-${n}-${Math.random().toString(16).slice(2)}.json`);
  const child = spawn(
    'ip',
    ['netns', 'exec', ns(n), process.execPath, '--import', TSX, BIN, 'node', ...args, `--ready-file=${readyFile}`],
    {
      cwd: dir,
      env: {
        ...process.env,
        CLINK_LOG_FORMAT: 'json',
        CLINK_LOG_LEVEL: 'info',
        CLINK_CACHE_DIR: join(dir, `cache-${n}`),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    log: () => log,
    ready: async () => {
      for (let i = 0; !existsSync(readyFile); i++) {
        if (child.exitCode !== null) throw new Error(`${n} exited ${child.exitCode}: ${log}`);
        if (i > 1_000) throw new Error(`${n} wrote no ready file: ${log}`);
        await sleep(20);
      }
      return JSON.parse(await readFile(readyFile, 'utf8')) as { controlPort: number; httpPort: number };
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}

let refused: string | undefined;
let certs: CertFiles;
let dir: string;
before(async () => {
  tearDown(); // what a killed earlier run may have left
  refused = setUp();
  dir = await mkdtemp(join(tmpdir(), 'clink-netns-'));
  certs = await makeCerts({
    c: { ips: [NODES.c] },
    w1: { ips: [NODES.w1] },
    w2: { ips: [NODES.w2] },
    client: {},
    elsewhere: { ips: ['10.77.0.99'] },
  });
});
after(async () => {
  tearDown();
  await rm(dir, { recursive: true, force: true });
  await rm(certs.dir, { recursive: true, force: true });
});

/** A coordinator in its namespace and two workers in theirs, all over mTLS; returns what a test needs. */
async function cluster(coordinatorCert: 'c' | 'elsewhere' = 'c') {
  const leaf = certs.leaf;
  const c = startNode('c', dir, [
    '--role=coordinator',
    `--bind-host=${NODES.c}`,
    '--port=0',
    '--http-port=0',
    `--tls-cert=${leaf[coordinatorCert]!.cert}`,
    `--tls-key=${leaf[coordinatorCert]!.key}`,
    `--tls-client-ca=${certs.ca}`,
  ]);
  const { controlPort, httpPort } = await c.ready();
  const worker = (n: 'w1' | 'w2'): NsNode =>
    startNode(n, dir, [
      '--role=worker',
      `--id=${n}`,
      `--data-host=${NODES[n]}`,
      `--coordinator-host=${NODES.c}`,
      `--coordinator-port=${controlPort}`,
      '--slots=2',
      `--tls-ca=${certs.ca}`,
      `--tls-cert=${leaf[n]!.cert}`,
      `--tls-key=${leaf[n]!.key}`,
      `--tls-client-cert=${leaf[n]!.cert}`,
      `--tls-client-key=${leaf[n]!.key}`,
    ]);
  const workers = { w1: worker('w1'), w2: worker('w2') };
  const tls = await loadTlsClient({ ca: certs.ca, clientCert: leaf.client!.cert, clientKey: leaf.client!.key });
  const http = async <T>(path: string): Promise<T> =>
    (await (await fetch(`http://${NODES.c}:${httpPort}${path}`)).json()) as T;
  const clients: ClusterClient[] = [];
  // What submitSinkJob needs of a harness: a directory and a client.
  const harness = {
    dir,
    client: async () => {
      const cl = await ClusterClient.connect(NODES.c, controlPort, { tls });
      clients.push(cl);
      return cl;
    },
  } as unknown as ClusterHarness;
  return {
    c,
    workers,
    http,
    harness,
    stop: async () => {
      for (const cl of clients) cl.close();
      await Promise.all([c.stop(), workers.w1.stop(), workers.w2.stop()]);
    },
  };
}

/** With the network already degraded: the file-sink job on the cluster writes exactly its expected output; then `undo`. */
async function exactOutputDespite(undo: () => void): Promise<void> {
  const k = await cluster();
  try {
    // What each node said last, for a failure here (a degraded network fails in ways seen only on some machines).
    const logs = () =>
      (['c', 'w1', 'w2'] as const)
        .map((n) => `--- ${n}:\n${(n === 'c' ? k.c : k.workers[n]).log().split('\n').slice(-15).join('\n')}`)
        .join('\n');
    await waitFor(
      'two workers registered',
      async () => (await k.http<{ workers: unknown[] }>('/api/v1/workers')).workers.length === 2,
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${logs()}`);
    });
    const { jobId, client, out, expected } = await submitSinkJob(k.harness, { rate: 20_000 });
    const done = await client.waitForCompletion(jobId);
    const restarts = () =>
      k.http<{ restarts: unknown[] }>(`/api/v1/jobs/${jobId}`).then(
        (v) => JSON.stringify(v.restarts),
        (err: Error) => err.message,
      );
    assert.equal(done.ok, true, `${done.error}; restarts ${await restarts()}\n${logs()}`);
    assert.deepEqual(await visibleLines(out), expected, `restarts ${await restarts()}\n${logs()}`);
  } finally {
    undo();
    await k.stop();
  }
}

/** `clink run <args>` (a mesh member) in namespace `n`; resolves with its exit and output. */
function meshMember(n: NodeName, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('ip', ['netns', 'exec', ns(n), process.execPath, '--import', TSX, BIN, 'run', ...args], {
    cwd: dir,
    env: {
      ...process.env,
      CLINK_LOG_FORMAT: 'json',
      CLINK_LOG_LEVEL: 'info',
      CLINK_CACHE_DIR: join(dir, `cache-${n}`),
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('a mesh run between hosts (network namespaces)', () => {
  test('three members on three hosts, with no coordinator, give what one process gives', async (t) => {
    if (refused) return t.skip(refused);
    const job = join(import.meta.dirname, '../../examples/window-aggregation.ts');
    const common = [job, '--no-typecheck', '-p', '3', '--output', 'json'];
    // Started in reverse: joiners dial until the leader listens.
    const members = [
      meshMember('w2', [...common, '--join', `${NODES.c}:7000`, '--exchange', `${NODES.w2}:7100`]),
      meshMember('w1', [...common, '--join', `${NODES.c}:7000`, '--exchange', `${NODES.w1}:7100`]),
      meshMember('c', [...common, '--lead', '3', '--control', `${NODES.c}:7000`, '--exchange', `${NODES.c}:7100`]),
    ];
    const [w2, w1, leader] = await Promise.all(members);
    for (const r of [w2!, w1!, leader!]) assert.equal(r.code, 0, r.stderr);
    assert.match(leader!.stderr, new RegExp(`"members":\\["${NODES.c}:7100","${NODES.w1}:7100","${NODES.w2}:7100"\\]`));
    const local = await meshMember('c', [
      job,
      '--no-typecheck',
      '-p',
      '3',
      '--output',
      'json',
      '--workers',
      '0',
      '--no-progress',
    ]);
    assert.equal(local.code, 0, local.stderr);
    const rows = (out: string) =>
      Object.entries(JSON.parse(out) as Record<string, unknown[]>).map(([k, v]) => [
        k,
        v.map((r) => JSON.stringify(r)).sort(),
      ]);
    assert.deepEqual(rows(leader!.stdout), rows(local.stdout));
  });
});

describe('between hosts (network namespaces, mTLS)', () => {
  test('a worker partitioned one way is lost on both sides and the job restarts from its checkpoint on the other, exactly once', async (t) => {
    if (refused) return t.skip(refused);
    const k = await cluster();
    try {
      await waitFor(
        'two workers registered',
        async () => (await k.http<{ workers: unknown[] }>('/api/v1/workers')).workers.length === 2,
      );
      const { jobId, client, out, expected } = await submitSinkJob(k.harness, { rate: 3000 });
      await waitFor(
        'a first checkpoint',
        async () =>
          (await k.http<{ checkpoints: unknown[] }>(`/api/v1/jobs/${jobId}/checkpoints`)).checkpoints.length > 0,
      );
      const view = await k.http<{ subtasks: { workerId: string }[] }>(`/api/v1/jobs/${jobId}`);
      assert.equal(new Set(view.subtasks.map((s) => s.workerId)).size, 2, 'the job spans both hosts');
      // w1's packets to the coordinator vanish; the coordinator's still reach it.
      must(['ip', 'netns', 'exec', ns('w1'), 'ip', 'route', 'add', 'blackhole', `${NODES.c}/32`]);
      await waitFor('the coordinator declaring w1 lost', () => /worker lost: w1 \(heartbeat timeout\)/.test(k.c.log()));
      await waitFor('w1 noticing it lost the coordinator', () => /lost the coordinator/.test(k.workers.w1.log()));
      const done = await client.waitForCompletion(jobId);
      assert.equal(done.ok, true, done.error);
      const after = await k.http<{ restarts: { restoredFrom: number; cause: string }[] }>(`/api/v1/jobs/${jobId}`);
      assert.equal(after.restarts[0]?.cause, 'worker lost: w1 (heartbeat timeout)');
      assert.ok(after.restarts[0]!.restoredFrom > 0, 'from a checkpoint');
      assert.deepEqual(await visibleLines(out), expected, 'every window result exactly once');
    } finally {
      run(['ip', 'netns', 'exec', ns('w1'), 'ip', 'route', 'del', 'blackhole', `${NODES.c}/32`]);
      await k.stop();
    }
  });

  test('a coordinator certificate that does not name the address dialled is refused, in words, and the worker keeps trying', async (t) => {
    if (refused) return t.skip(refused);
    const k = await cluster('elsewhere');
    try {
      const expected = `the server's certificate does not match the host ${NODES.c} (it names IP Address:10.77.0.99); issue it with IP:${NODES.c} among its names, or pass --tls-no-verify-hostname`;
      await waitFor('the refusal in w1 log', () => k.workers.w1.log().includes(expected));
      assert.equal((await k.http<{ workers: unknown[] }>('/api/v1/workers')).workers.length, 0);
      assert.equal(k.workers.w1.child.exitCode, null, 'a transport failure is retried, not fatal');
    } finally {
      await k.stop();
    }
  });

  test('30% packet loss on a worker (both ways) slows the job and loses nothing', async (t) => {
    if (refused) return t.skip(refused);
    const rules = ['OUTPUT', 'INPUT'].map((chain) => [
      'ip',
      'netns',
      'exec',
      ns('w1'),
      'iptables',
      '-A',
      chain,
      '-m',
      'statistic',
      '--mode',
      'random',
      '--probability',
      '0.3',
      '-j',
      'DROP',
    ]);
    const first = run(rules[0]!);
    if (!first.ok)
      return t.skip(`iptables with the statistic match is not available here (${first.err}): loss cannot be made`);
    must(rules[1]!);
    await exactOutputDespite(() => run(['ip', 'netns', 'exec', ns('w1'), 'iptables', '-F']));
  });

  test('200 ms of delay on a worker slows the job and loses nothing', async (t) => {
    if (refused) return t.skip(refused);
    const netem = run([
      'ip',
      'netns',
      'exec',
      ns('w1'),
      'tc',
      'qdisc',
      'add',
      'dev',
      `ckn1${tag}`,
      'root',
      'netem',
      'delay',
      '200ms',
    ]);
    if (!netem.ok)
      return t.skip(`the kernel has no netem queueing discipline here (${netem.err}): delay cannot be made`);
    await exactOutputDespite(() =>
      run(['ip', 'netns', 'exec', ns('w1'), 'tc', 'qdisc', 'del', 'dev', `ckn1${tag}`, 'root']),
    );
  });
});
