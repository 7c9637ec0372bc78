/**
 * Kafka -> job -> Kafka pass-through, in one process at parallelism 1 (one worker core): 100-byte
 * records read from a 4-partition topic and written to another, at-least-once and exactly-once (a
 * checkpoint, so a transaction, every second). Measured from the job's start to its end, the output
 * counted read committed. The broker is CLINK_BENCH_KAFKA, else one started here from the Maven jars
 * (scripts/kafka.mjs); it runs on the same two cores, so the figures include its share of them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Producer } from '@platformatic/kafka';
import { defineJob, startJob } from '../src/index.js';
import { createTopic, readTopic, topicName } from '../test/harness/kafka.js';
// @ts-expect-error: a plain ES module shared with the service runner
import { startKafka } from '../scripts/kafka.mjs';

export interface KafkaBench {
  records: number;
  atLeastOnceRecordsPerSec: number;
  exactlyOnceRecordsPerSec: number;
  runs: number;
}

const quick = process.argv.includes('--quick');
const RECORDS = quick ? 300_000 : 1_000_000;
const RUNS = quick ? 1 : 3;

async function fill(bootstrap: string, topic: string): Promise<void> {
  const p = new Producer({ clientId: 'bench', bootstrapBrokers: [bootstrap], acks: 1 });
  const value = Buffer.alloc(100, 120);
  try {
    for (let i = 0; i < RECORDS; i += 4_000)
      await p.send({ messages: Array.from({ length: 4_000 }, (_, j) => ({ topic, partition: (i + j) % 4, value })) });
  } finally {
    await p.close();
  }
}

async function passThrough(
  bootstrap: string,
  input: string,
  delivery: 'at-least-once' | 'exactly-once',
): Promise<number> {
  const output = topicName(`bench-out-${delivery}`);
  await createTopic(bootstrap, output, 4);
  const job = defineJob({ name: 'kafka-bench', version: '1' }, (env) => {
    env
      .fromSource<{ value: Buffer }>('kafka', {
        bootstrapServers: bootstrap,
        topic: input,
        bounded: true,
        valueFormat: 'bytes',
        keyFormat: 'bytes',
      })
      .map((r) => r.value)
      .sinkTo('kafka', {
        bootstrapServers: bootstrap,
        topic: output,
        valueFormat: 'bytes',
        delivery,
        transactionalIdPrefix: output,
      });
  });
  const started = performance.now();
  const exec = startJob(job, { parallelism: 1 });
  let running = true;
  const ticker = (async () => {
    while (running && delivery === 'exactly-once') {
      await new Promise((r) => setTimeout(r, 1_000));
      if (running) await exec.triggerCheckpoint().catch(() => undefined);
    }
  })();
  await exec.done;
  const seconds = (performance.now() - started) / 1000;
  running = false;
  await ticker;
  const written = (await readTopic(bootstrap, output)).length;
  if (written !== RECORDS) throw new Error(`${delivery}: ${written} records written for ${RECORDS}`);
  return RECORDS / seconds;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dir = await mkdtemp(join(tmpdir(), 'clink-kafka-bench-'));
const own = process.env.CLINK_BENCH_KAFKA
  ? undefined
  : ((await startKafka(join(dir, 'broker'))) as { bootstrap: string; stop(): Promise<void> });
const bootstrap = process.env.CLINK_BENCH_KAFKA ?? own!.bootstrap;
try {
  const input = topicName('bench-in');
  await createTopic(bootstrap, input, 4);
  await fill(bootstrap, input);
  const alo: number[] = [];
  const eo: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    alo.push(await passThrough(bootstrap, input, 'at-least-once'));
    eo.push(await passThrough(bootstrap, input, 'exactly-once'));
  }
  const result: KafkaBench = {
    records: RECORDS,
    atLeastOnceRecordsPerSec: median(alo),
    exactlyOnceRecordsPerSec: median(eo),
    runs: RUNS,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  await own?.stop();
  await rm(dir, { recursive: true, force: true });
}
