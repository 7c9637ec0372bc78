/**
 * Takeover time: two coordinators standing for leadership (the file lock, then etcd with a 3 s lease),
 * two worker processes following the leader, and a keyed unbounded job checkpointing every 500 ms. The
 * leader is killed with SIGKILL; measured from the kill to the standby's election, to the job taken over,
 * and to the first checkpoint completed under the new leader (the job is whole and durable again).
 * etcd is the one `npm run test:services` would start (installed through apt when missing and allowed);
 * without it the etcd row says why it was not measured.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { loadJobModule } from '../src/loader/index.js';
import { buildJob } from '../src/sdk/index.js';
import { ClusterHarness } from '../test/harness/cluster.js';

export interface TakeoverResult {
  election: 'file' | 'etcd';
  /** kill -9 -> a standby says it leads. */
  electedMs: number;
  /** kill -9 -> the first checkpoint completed under the new leader. */
  recoveredMs: number;
  restoredFrom: number;
}

export type TakeoverBench =
  (TakeoverResult & { runs: number; recoveredMsRange: [number, number] }) | { election: 'etcd'; skipped: string };

export const ETCD_LEASE_TTL_S = 3;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function measure(election: 'file' | 'etcd', etcd?: string): Promise<TakeoverResult> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const h = await ClusterHarness.start({
    workers: 2,
    slots: 4,
    ha: { coordinators: 2, ...(etcd ? { etcd, leaseTtlS: ETCD_LEASE_TTL_S } : {}) },
  });
  try {
    const loaded = await loadJobModule(join(root, 'test/fixtures/jobs/unbounded.ts'), {
      cacheDir: join(h.dir, 'cache'),
    });
    const params = { rate: '2000' };
    const client = await h.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 4, params }).spec,
      params,
      buildParallelism: 4,
      checkpoint: { checkpointDir: join(h.dir, 'ckpt'), intervalMs: 500 },
    });
    client.close();
    const checkpoints = async (): Promise<{ checkpointId: number; completedAtMs: number }[]> =>
      (
        await h.http<{ checkpoints?: { checkpointId: number; completedAtMs: number }[] }>(
          `/api/v1/jobs/${jobId}/checkpoints`,
        )
      ).body.checkpoints ?? [];
    while ((await checkpoints()).length === 0) await sleep(20);
    const { leader } = await h.waitForLeader();
    const killedAt = Date.now();
    leader.child.kill('SIGKILL');
    await h.waitForLeader(leader, 60_000);
    const electedMs = Date.now() - killedAt;
    for (;;) {
      const after = (await checkpoints().catch(() => [])).find((c) => c.completedAtMs > killedAt);
      if (after) {
        const line = await h.waitForLog(h.coordinator, new RegExp(`^job ${jobId} \\(unbounded\\) taken over at epoch`));
        return {
          election,
          electedMs,
          recoveredMs: after.completedAtMs - killedAt,
          restoredFrom: Number(line.restoredFrom),
        };
      }
      if (Date.now() - killedAt > 60_000)
        throw new Error(`takeover bench (${election}): no checkpoint under the new leader within 60 s`);
      await sleep(10);
    }
  } finally {
    await h.close();
  }
}

async function median(election: 'file' | 'etcd', runs: number, etcd?: string): Promise<TakeoverBench> {
  const all: TakeoverResult[] = [];
  for (let i = 0; i < runs; i++) all.push(await measure(election, etcd));
  all.sort((a, b) => a.recoveredMs - b.recoveredMs);
  return {
    ...all[Math.floor((runs - 1) / 2)]!,
    runs,
    recoveredMsRange: [all[0]!.recoveredMs, all.at(-1)!.recoveredMs],
  };
}

/** File election and etcd election, 3 runs each (quick: 1). */
export async function runTakeoverBench(options: { quick?: boolean } = {}): Promise<TakeoverBench[]> {
  const runs = options.quick ? 1 : 3;
  const out: TakeoverBench[] = [await median('file', runs)];
  type Services = { env: Record<string, string>; stop: () => Promise<void> };
  let services: Services | undefined;
  try {
    const etcd =
      process.env.CLINK_TEST_ETCD ??
      (services = await (
        (await import(join(fileURLToPath(new URL('..', import.meta.url)), 'scripts/services.mjs'))) as {
          startServices: () => Promise<Services>;
        }
      ).startServices()).env.CLINK_TEST_ETCD!;
    out.push(await median('etcd', runs, etcd));
  } catch (err) {
    out.push({ election: 'etcd', skipped: (err as Error).message });
  } finally {
    await services?.stop();
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runTakeoverBench({ quick: process.argv.includes('--quick') })) + '\n');
}
