// Kafka to Kafka exactly once on a real cluster and a real broker: kill -9 of a worker three times at
// random moments (a seeded schedule) while partitions are added to the input topic, and a hard broker
// restart in the middle of a transaction. The output topic, read committed, must hold every input id
// exactly once. A failure names its seed: CLINK_CHAOS_SEEDS=<seed> replays it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { chaosSeed, killWorkersAtRandom, prng, startPipe, type Pipe } from '../harness/chaos-job.js';
import { addPartitions, createTopic, kafkaBootstrap, produceJson, readTopic, topicName } from '../harness/kafka.js';
// @ts-expect-error: a plain ES module shared with the service runner
import { startKafka } from '../../scripts/kafka.mjs';

const JOB = resolve(import.meta.dirname, '../fixtures/jobs/kafka-pipe.ts');
const SEED = chaosSeed();
const pipeParams = (bootstrap: string, input: string, output: string, rate: number): Record<string, string> => ({ bootstrap, in: input, out: output, prefix: output, rate: String(rate) });

/** Wait until the output holds `n` records and two more checkpoints completed; then it must stay exact. */
async function assertExactlyOnce(pipe: Pipe, bootstrap: string, output: string, n: number, what: string): Promise<void> {
  let at = 0;
  for (;;) {
    const out = await readTopic(bootstrap, output);
    assert.ok(out.length <= n, `${what}: ${out.length} records written for ${n} inputs`);
    if (out.length === n) break;
    at = await pipe.checkpointAfter(at);
  }
  at = await pipe.checkpointAfter(await pipe.checkpointAfter(at));
  const ids = (await readTopic(bootstrap, output)).map((r) => (JSON.parse(r.value) as { id: number; doubled: number }).id).sort((a, b) => a - b);
  assert.deepEqual(ids, Array.from({ length: n }, (_, i) => i), `${what}: each input id exactly once`);
}

test(`kafka exactly once: kill -9 of a worker three times at random moments while the input topic grows (seed ${SEED})`, { timeout: 180_000 }, async (t) => {
  const bootstrap = kafkaBootstrap();
  const random = prng(SEED);
  const input = topicName('eo-in');
  const output = topicName('eo-out');
  await createTopic(bootstrap, input, 4);
  await createTopic(bootstrap, output, 3);
  const rows = (from: number, n: number): { id: number }[] => Array.from({ length: n }, (_, i) => ({ id: from + i }));
  await produceJson(bootstrap, input, rows(0, 12_000), (r) => String(r.id));
  const pipe = await startPipe(JOB, pipeParams(bootstrap, input, output, 1_500));
  try {
    // Two more partitions before the second kill, found by discovery and read whole, wherever ownerOf puts them.
    const log = await killWorkersAtRandom(pipe, random, 3, async (kill) => {
      if (kill !== 1) return undefined;
      await addPartitions(bootstrap, input, 6);
      await produceJson(bootstrap, input, rows(12_000, 3_000), (r) => String(r.id));
      return 'input grew to 6 partitions';
    });
    await assertExactlyOnce(pipe, bootstrap, output, 15_000, `seed ${SEED} (${log.join('; ')})`);
    t.diagnostic(log.join('; '));
  } finally {
    await pipe.client.cancel(pipe.jobId).catch(() => undefined);
    await pipe.h.close();
  }
});

test('kafka exactly once across a hard broker restart in the middle of a transaction', { timeout: 180_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'clink-kafka-restart-'));
  const broker = (await startKafka(join(dir, 'broker'))) as { bootstrap: string; restart(hard: boolean): Promise<void>; stop(): Promise<void> };
  let pipe: Pipe | undefined;
  try {
    const input = topicName('restart-in');
    const output = topicName('restart-out');
    await createTopic(broker.bootstrap, input, 2);
    await createTopic(broker.bootstrap, output, 2);
    await produceJson(broker.bootstrap, input, Array.from({ length: 8_000 }, (_, id) => ({ id })), (r) => String(r.id));
    pipe = await startPipe(JOB, pipeParams(broker.bootstrap, input, output, 1_000));
    await pipe.checkpointAfter(await pipe.checkpointAfter(0));
    // Records are flowing into an open transaction when the broker dies.
    await broker.restart(true);
    await assertExactlyOnce(pipe, broker.bootstrap, output, 8_000, 'broker restart');
  } finally {
    if (pipe) {
      await pipe.client.cancel(pipe.jobId).catch(() => undefined);
      await pipe.h.close();
    }
    await broker.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
