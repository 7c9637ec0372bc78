// The NATS JetStream connector against the real nats-server `npm run test:services` starts
// (CLINK_TEST_NATS): the source replays a stream from the start or a sequence and ends when bounded; the
// sink's message ids make the server drop what a restore replays: kill -9 of a worker three times at
// random moments (a seeded schedule) and the stream holds every id exactly once.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { defineJob, runJob, type NatsRecord } from '../../src/index.js';
import { collect } from '../helpers.js';
import { chaosSeed, killWorkersAtRandom, prng, startPipe } from '../harness/chaos-job.js';
import { createStream, natsServer, publishJson, readStream, streamName } from '../harness/nats.js';

const SEED = chaosSeed();

describe('nats connector', () => {
  test('the source replays a stream from its start or a sequence, subjects filtered, and ends when bounded', async () => {
    const server = natsServer();
    const stream = streamName('src');
    await createStream(server, stream);
    await publishJson(
      server,
      `${stream}.a`,
      Array.from({ length: 300 }, (_, id) => ({ id })),
    );
    await publishJson(server, `${stream}.b`, [{ id: -1 }]);
    const all = await collect<NatsRecord<{ id: number }>>((env) =>
      env.fromSource('nats', { servers: server, stream, bounded: true }).collect(),
    );
    assert.equal(all.length, 301);
    assert.deepEqual(
      all.map((r) => r.sequence),
      Array.from({ length: 301 }, (_, i) => i + 1),
    );
    const onlyA = await collect<NatsRecord<{ id: number }>>((env) =>
      env
        .fromSource('nats', {
          servers: server,
          stream,
          subject: `${stream}.a`,
          bounded: true,
          startFrom: 'sequence',
          startSequence: 101,
        })
        .collect(),
    );
    assert.deepEqual(
      onlyA.map((r) => r.value.id),
      Array.from({ length: 200 }, (_, i) => 100 + i),
    );
    await assert.rejects(
      runJob(
        defineJob(
          { name: 'x', version: '1' },
          (env) => void env.fromSource('nats', { servers: server, stream: 'NO_SUCH', bounded: true }).collect(),
        ),
      ),
      /stream 'NO_SUCH' not found.*create it first/,
    );
  });

  test('named by string in a job at parallelism 4, the source runs once and reads its stream once', async () => {
    const server = natsServer();
    const stream = streamName('p4');
    await createStream(server, stream);
    await publishJson(
      server,
      `${stream}.a`,
      Array.from({ length: 500 }, (_, id) => ({ id })),
    );
    const read = await collect<{ id: number }>(
      (env) =>
        env
          .fromSource<NatsRecord<{ id: number }>>('nats', { servers: server, stream, bounded: true })
          .map((m) => m.value)
          .collect(),
      { parallelism: 4 },
    );
    assert.deepEqual(
      read.map((r) => r.id).sort((a, b) => a - b),
      Array.from({ length: 500 }, (_, i) => i),
      'each message once (four subtasks each read it all before)',
    );
  });

  const RECORDS = 60_000;
  test(
    `the sink exactly once by message id: kill -9 of a worker three times at random moments (seed ${SEED})`,
    { timeout: 180_000 },
    async (t) => {
      const server = natsServer();
      const random = prng(SEED);
      const stream = streamName('eo');
      await createStream(server, stream);
      // 30 s of input: three kills, each a heartbeat timeout and a redeploy, fit in it on a busy machine too.
      const pipe = await startPipe(resolve(import.meta.dirname, '../fixtures/jobs/nats-sink.ts'), {
        server,
        subject: `${stream}.out`,
        prefix: stream,
        count: String(RECORDS),
        rate: '2000',
      });
      try {
        const log = await killWorkersAtRandom(pipe, random, 3);
        const done = await pipe.client.waitForCompletion(pipe.jobId);
        assert.equal(done.ok, true, done.error);
        const ids = (await readStream(server, stream)).map((m) => (m.value as { id: number }).id).sort((a, b) => a - b);
        assert.deepEqual(
          ids,
          Array.from({ length: RECORDS }, (_, i) => i),
          `seed ${SEED} (${log.join('; ')}): each id exactly once`,
        );
        t.diagnostic(log.join('; '));
      } finally {
        await pipe.h.close();
      }
    },
  );
});
