// Kafka to Kafka exactly once across rescales on a real broker: the pipe job is rescaled 2 -> 3 -> 1
// while it reads. The source's offsets must follow the partitions to their new owners, and the sink's
// subtasks that go away must leave no transaction open (read committed would stall at it): the output
// topic must hold every input id exactly once.
import { test } from 'node:test';
import { rescaleInTurn, startPipe } from '../harness/chaos-job.js';
import {
  assertKafkaExactlyOnce,
  createTopic,
  KAFKA_PIPE_JOB,
  kafkaBootstrap,
  kafkaPipeParams,
  produceJson,
  topicName,
} from '../harness/kafka.js';

test('kafka exactly once across rescales 2 -> 3 -> 1 mid-stream', { timeout: 180_000 }, async () => {
  const bootstrap = kafkaBootstrap();
  const input = topicName('rs-in');
  const output = topicName('rs-out');
  await createTopic(bootstrap, input, 4);
  await createTopic(bootstrap, output, 3);
  await produceJson(
    bootstrap,
    input,
    Array.from({ length: 9_000 }, (_, id) => ({ id })),
    (r) => String(r.id),
  );
  const pipe = await startPipe(KAFKA_PIPE_JOB, kafkaPipeParams(bootstrap, input, output, 500));
  try {
    await rescaleInTurn(pipe, [3, 1]);
    await assertKafkaExactlyOnce(pipe, bootstrap, output, 9_000, 'rescaled 2 -> 3 -> 1');
  } finally {
    await pipe.client.cancel(pipe.jobId).catch(() => undefined);
    await pipe.h.close();
  }
});
