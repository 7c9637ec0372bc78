// Kafka to Kafka exactly once on a real cluster and a real broker: kill -9 of a worker three times at
// random moments (a seeded schedule) while partitions are added to the input topic. The output topic,
// read committed, must hold every input id exactly once. A failure names its seed:
// CLINK_CHAOS_SEEDS=<seed> replays it. (The broker restart is in kafka-broker-restart.test.ts.)
import { test } from 'node:test';
import { chaosSeed, killWorkersAtRandom, prng, startPipe } from '../harness/chaos-job.js';
import {
  addPartitions,
  assertKafkaExactlyOnce,
  createTopic,
  KAFKA_PIPE_JOB,
  kafkaBootstrap,
  kafkaPipeParams,
  produceJson,
  topicName,
} from '../harness/kafka.js';

const SEED = chaosSeed();

test(
  `kafka exactly once: kill -9 of a worker three times at random moments while the input topic grows (seed ${SEED})`,
  { timeout: 180_000 },
  async (t) => {
    const bootstrap = kafkaBootstrap();
    const random = prng(SEED);
    const input = topicName('eo-in');
    const output = topicName('eo-out');
    await createTopic(bootstrap, input, 4);
    await createTopic(bootstrap, output, 3);
    const rows = (from: number, n: number): { id: number }[] => Array.from({ length: n }, (_, i) => ({ id: from + i }));
    await produceJson(bootstrap, input, rows(0, 12_000), (r) => String(r.id));
    const pipe = await startPipe(KAFKA_PIPE_JOB, kafkaPipeParams(bootstrap, input, output, 1_500));
    try {
      // Two more partitions before the second kill, found by discovery and read whole, wherever ownerOf puts them.
      const log = await killWorkersAtRandom(pipe, random, 3, async (kill) => {
        if (kill !== 1) return undefined;
        await addPartitions(bootstrap, input, 6);
        await produceJson(bootstrap, input, rows(12_000, 3_000), (r) => String(r.id));
        return 'input grew to 6 partitions';
      });
      await assertKafkaExactlyOnce(pipe, bootstrap, output, 15_000, `seed ${SEED} (${log.join('; ')})`);
      t.diagnostic(log.join('; '));
    } finally {
      await pipe.client.cancel(pipe.jobId).catch(() => undefined);
      await pipe.h.close();
    }
  },
);
