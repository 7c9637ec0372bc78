// Kafka to Kafka exactly once across a hard restart (SIGKILL) of the broker while records flow into an
// open transaction: the job rides it out or restarts from its checkpoint, and the output topic, read
// committed, holds every input id exactly once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startPipe, type Pipe } from '../harness/chaos-job.js';
import {
  assertKafkaExactlyOnce,
  createTopic,
  KAFKA_PIPE_JOB,
  kafkaPipeParams,
  produceJson,
  topicName,
} from '../harness/kafka.js';
// @ts-expect-error: a plain ES module shared with the service runner
import { startKafka } from '../../scripts/kafka.mjs';

test(
  'kafka exactly once across a hard broker restart in the middle of a transaction',
  { timeout: 180_000 },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-kafka-restart-'));
    const broker = (await startKafka(join(dir, 'broker'))) as {
      bootstrap: string;
      restart(hard: boolean): Promise<void>;
      stop(): Promise<void>;
    };
    let pipe: Pipe | undefined;
    try {
      const input = topicName('restart-in');
      const output = topicName('restart-out');
      await createTopic(broker.bootstrap, input, 2);
      await createTopic(broker.bootstrap, output, 2);
      await produceJson(
        broker.bootstrap,
        input,
        Array.from({ length: 8_000 }, (_, id) => ({ id })),
        (r) => String(r.id),
      );
      pipe = await startPipe(KAFKA_PIPE_JOB, kafkaPipeParams(broker.bootstrap, input, output, 1_000));
      await pipe.checkpoints(2);
      // Records are flowing into an open transaction when the broker dies.
      await broker.restart(true);
      await assertKafkaExactlyOnce(pipe, broker.bootstrap, output, 8_000, 'broker restart');
    } finally {
      if (pipe) {
        await pipe.client.cancel(pipe.jobId).catch(() => undefined);
        await pipe.h.close();
      }
      await broker.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
