// The Kafka connector against the real broker `npm run test:services` starts (CLINK_TEST_KAFKA), in one
// process: partitions spread over subtasks, start positions, read_committed skipping aborted
// transactions, per-partition watermarks, both sink guarantees, and the errors a bad setup gets.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Producer } from '@platformatic/kafka';
import { ownerOf, runJob, startJob, defineJob, Windows, type KafkaRecord } from '../../src/index.js';
import { collect, sortBy } from '../helpers.js';
import {
  commitGroupOffsets,
  createTopic,
  kafkaBootstrap,
  produceJson,
  readTopic,
  topicName,
} from '../harness/kafka.js';

interface Row {
  id: number;
  ts: number;
}

const rows = (n: number, from = 0): Row[] =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, ts: 1_000 + (from + i) * 10 }));

describe('kafka connector', () => {
  test('a bounded read takes each partition on the subtask ownerOf names, every record once, with key, offset and timestamp', async () => {
    const bootstrap = kafkaBootstrap();
    const topic = topicName('spread');
    await createTopic(bootstrap, topic, 5);
    await produceJson(
      bootstrap,
      topic,
      rows(3_000),
      (r) => `k${r.id}`,
      (r) => r.ts,
    );
    const got = await collect<{ sub: number; r: KafkaRecord<string, Row> }>(
      (env) =>
        env
          .fromSource<KafkaRecord<string, Row>>('kafka', { bootstrapServers: bootstrap, topic, bounded: true })
          .process({ processElement: (r, ctx, out) => out.collect({ sub: ctx.subtaskIndex, r }) })
          .collect(),
      { parallelism: 3 },
    );
    assert.equal(got.length, 3_000);
    assert.deepEqual(
      sortBy(
        got.map((g) => g.r.value.id),
        (x) => x,
      ),
      rows(3_000).map((r) => r.id),
    );
    for (const { sub, r } of got) {
      assert.equal(sub, ownerOf(topic, r.partition, 3), `partition ${r.partition} read on its owner`);
      assert.equal(r.key, `k${r.value.id}`);
      assert.equal(r.timestamp, r.value.ts);
    }
    assert.equal(new Set(got.map((g) => g.sub)).size, 3, 'five partitions spread over three subtasks');
    const offsets = got.filter((g) => g.r.partition === 0).map((g) => g.r.offset);
    assert.deepEqual(
      offsets,
      [...offsets].sort((a, b) => a - b),
      'a partition is read in offset order',
    );
  });

  test('start positions: latest skips what is there, timestamp starts at the first record at or after it, group-offsets where a group left off', async () => {
    const bootstrap = kafkaBootstrap();
    const topic = topicName('start');
    await createTopic(bootstrap, topic, 2);
    await produceJson(bootstrap, topic, rows(100), undefined, (r) => r.ts);
    const fromTs = await collect<KafkaRecord<string, Row>>((env) =>
      env
        .fromSource('kafka', {
          bootstrapServers: bootstrap,
          topic,
          bounded: true,
          startFrom: 'timestamp',
          startTimestampMs: 1_000 + 60 * 10,
        })
        .collect(),
    );
    assert.deepEqual(
      sortBy(
        fromTs.map((r) => r.value.id),
        (x) => x,
      ),
      rows(40, 60).map((r) => r.id),
    );
    const latest = await collect<KafkaRecord>((env) =>
      env.fromSource('kafka', { bootstrapServers: bootstrap, topic, bounded: true, startFrom: 'latest' }).collect(),
    );
    assert.deepEqual(latest, []);
    // The group committed partition 0 up to offset 30 and nothing on partition 1: that one starts at its beginning.
    const groupId = `${topic}-group`;
    await commitGroupOffsets(bootstrap, groupId, topic, { 0: 30 });
    const fromGroup = await collect<KafkaRecord<string, Row>>((env) =>
      env
        .fromSource('kafka', { bootstrapServers: bootstrap, topic, bounded: true, startFrom: 'group-offsets', groupId })
        .collect(),
    );
    const all = await collect<KafkaRecord<string, Row>>((env) =>
      env.fromSource('kafka', { bootstrapServers: bootstrap, topic, bounded: true }).collect(),
    );
    const expected = all.filter((r) => r.partition === 1 || r.offset >= 30).map((r) => r.value.id);
    assert.deepEqual(
      sortBy(
        fromGroup.map((r) => r.value.id),
        (x) => x,
      ),
      sortBy(expected, (x) => x),
    );
    assert.ok(expected.length < 100 && expected.length > 0);
  });

  test('keys and values read as JSON, string or bytes; a value that is not JSON names where it is', async () => {
    const bootstrap = kafkaBootstrap();
    const topic = topicName('formats');
    await createTopic(bootstrap, topic, 1);
    await produceJson(bootstrap, topic, [{ id: 1 }], () => 'k1');
    const read = (o: Record<string, unknown>) =>
      collect<KafkaRecord>((env) =>
        env.fromSource('kafka', { bootstrapServers: bootstrap, topic, bounded: true, ...o }).collect(),
      );
    const [json] = await read({});
    assert.deepEqual([json!.key, json!.value], ['k1', { id: 1 }]);
    const [text] = await read({ keyFormat: 'bytes', valueFormat: 'string' });
    assert.deepEqual([Buffer.isBuffer(text!.key), text!.value], [true, '{"id":1}']);
    const [bytes] = await read({ valueFormat: 'bytes' });
    assert.equal((bytes!.value as Buffer).toString(), '{"id":1}');
    const bad = topicName('not-json');
    await createTopic(bootstrap, bad, 1);
    const p = new Producer({ clientId: 't', bootstrapBrokers: [bootstrap], acks: -1 });
    await p.send({ messages: [{ topic: bad, value: Buffer.from('plain text') }] });
    await p.close();
    await assert.rejects(
      collect((env) => env.fromSource('kafka', { bootstrapServers: bootstrap, topic: bad, bounded: true }).collect()),
      new RegExp(`the value at '${bad}' partition 0 offset 0 is not JSON .*format 'string' or 'bytes'`),
    );
  });

  test('read_committed: records of an aborted transaction and the markers are skipped; read_uncommitted sees them', async () => {
    const bootstrap = kafkaBootstrap();
    const topic = topicName('aborted');
    await createTopic(bootstrap, topic, 1);
    const p = new Producer({
      clientId: 't',
      bootstrapBrokers: [bootstrap],
      idempotent: true,
      acks: -1,
      transactionalId: `${topic}-tx`,
    });
    const send = async (ids: number[], commit: boolean): Promise<void> => {
      const tx = await p.beginTransaction();
      await tx.send({ messages: ids.map((id) => ({ topic, value: Buffer.from(JSON.stringify({ id })) })) });
      await (commit ? tx.commit() : tx.abort());
    };
    await send([1, 2], true);
    await send([3, 4], false);
    await send([5], true);
    await p.close();
    const read = (isolation: string): Promise<number[]> =>
      collect<KafkaRecord<string, { id: number }>>((env) =>
        env.fromSource('kafka', { bootstrapServers: bootstrap, topic, bounded: true, isolation }).collect(),
      ).then((r) => r.map((x) => x.value.id));
    assert.deepEqual(await read('read_committed'), [1, 2, 5]);
    assert.deepEqual(await read('read_uncommitted'), [1, 2, 3, 4, 5]);
  });

  test('watermarks per partition drive event-time windows; an idle partition holds none back', async () => {
    const bootstrap = kafkaBootstrap();
    const topic = topicName('wm');
    await createTopic(bootstrap, topic, 2);
    // Everything on partition 0 (one key); partition 1 stays empty and goes idle.
    await produceJson(
      bootstrap,
      topic,
      rows(50),
      () => 'same',
      (r) => r.ts,
    );
    const fired: { start: number; n: number; seen: number }[] = [];
    let seen = 0;
    const job = defineJob({ name: 'wm', version: '1' }, (env) => {
      env
        // Paced, so partition 0 goes idle while partition 1 is still being read.
        .fromSource<KafkaRecord<string, Row>>('kafka', {
          bootstrapServers: bootstrap,
          topic,
          maxRecordsPerSecond: 40,
          watermarks: { maxOutOfOrdernessMs: 0, idleTimeoutMs: 200 },
        })
        .map((r) => (seen++, r))
        .keyBy(() => 0)
        .window(Windows.tumbling(100))
        .aggregate({ create: () => 0, add: (_r, a: number) => a + 1, result: (n, _k, w) => ({ start: w.start, n }) })
        .map((w) => void fired.push({ ...w, seen }))
        .sinkTo('blackhole');
    });
    const handle = startJob(job, { parallelism: 1 });
    handle.done.catch(() => undefined);
    try {
      // Windows [1000,1100) .. [1400,1500) close as the watermark passes them, with the source unbounded.
      for (let i = 0; i < 200 && fired.length < 4; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(fired.length >= 4, `windows fired on the partition's watermark: ${JSON.stringify(fired)}`);
      assert.deepEqual(
        fired.slice(0, 4).map(({ start, n }) => ({ start, n })),
        [1000, 1100, 1200, 1300].map((start) => ({ start, n: 10 })),
      );
      assert.ok(
        fired[0]!.seen < 50,
        `the first window fired while the partition was still being read (after ${fired[0]!.seen} of 50 records)`,
      );
    } finally {
      handle.cancel();
      await handle.done.catch(() => undefined);
    }
  });

  test('the sink writes at-least-once and exactly-once, keyed by a field; bad options name the fix', async () => {
    const bootstrap = kafkaBootstrap();
    for (const delivery of ['at-least-once', 'exactly-once'] as const) {
      const topic = topicName(`sink-${delivery}`);
      await createTopic(bootstrap, topic, 3);
      const job = defineJob({ name: `sink-${delivery}`, version: '1' }, (env) => {
        env
          .fromSequence(0, 4_999)
          .map((id) => ({ id }))
          .sinkTo('kafka', {
            bootstrapServers: bootstrap,
            topic,
            delivery,
            transactionalIdPrefix: topic,
            keyField: 'id',
          });
      });
      await runJob(job, { parallelism: 2 });
      const out = await readTopic(bootstrap, topic);
      assert.equal(out.length, 5_000, delivery);
      assert.deepEqual(
        sortBy(
          out.map((r) => JSON.parse(r.value).id),
          (x) => x,
        ),
        Array.from({ length: 5_000 }, (_, i) => i),
      );
      assert.equal(new Set(out.map((r) => r.partition)).size, 3, 'keys spread over the partitions');
      for (const r of out) assert.equal(r.key, String(JSON.parse(r.value).id));
    }
    const bad = defineJob({ name: 'bad', version: '1' }, (env) => {
      env.fromSequence(0, 1).sinkTo('kafka', { bootstrapServers: bootstrap, topic: 'x', delivery: 'exactly-once' });
    });
    await assert.rejects(runJob(bad), /transactionalIdPrefix.*stable across restarts/s);
  });

  test('a topic that does not exist fails the job naming it', async () => {
    const bootstrap = kafkaBootstrap();
    const job = defineJob({ name: 'missing', version: '1' }, (env) => {
      env.fromSource('kafka', { bootstrapServers: bootstrap, topic: 'no-such-topic-here', bounded: true }).collect();
    });
    await assert.rejects(runJob(job), /topic 'no-such-topic-here' does not exist/);
  });
});
