// Test helpers for a real Kafka broker: create topics, produce, and read a topic back whole (read
// committed: what a downstream consumer would see), through the same client library the connector uses.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { Admin, Connection, Consumer, fetchV17, Producer } from '@platformatic/kafka';
import type { Pipe } from './chaos-job.js';

export function kafkaBootstrap(): string {
  const b = process.env.CLINK_TEST_KAFKA;
  assert.ok(
    b,
    'CLINK_TEST_KAFKA names the Kafka broker these tests use: run them with npm run test:services, which starts one',
  );
  return b;
}

let seq = 0;
/** A topic name no other test uses. */
export function topicName(what: string): string {
  return `${what}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
}

/**
 * Create a topic and wait until the broker's metadata shows every partition with a leader: a source
 * started before would see fewer and take the rest for partitions added later (read from their start).
 */
export async function createTopic(bootstrap: string, topic: string, partitions: number): Promise<void> {
  const admin = new Admin({ clientId: 'test', bootstrapBrokers: [bootstrap] });
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
    await untilPartitions(admin, topic, partitions);
  } finally {
    await admin.close();
  }
}

export async function addPartitions(bootstrap: string, topic: string, total: number): Promise<void> {
  const admin = new Admin({ clientId: 'test', bootstrapBrokers: [bootstrap] });
  try {
    await admin.createPartitions({ topics: [{ name: topic, count: total }] });
    await untilPartitions(admin, topic, total);
  } finally {
    await admin.close();
  }
}

async function untilPartitions(admin: Admin, topic: string, count: number): Promise<void> {
  for (;;) {
    const t = (await admin.metadata({ topics: [topic], forceUpdate: true }).catch(() => undefined))?.topics.get(topic);
    if (t && t.partitionsCount === count && t.partitions.every((p) => p.leader >= 0)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Set the offsets consumer group `groupId` has committed, as a group that read that far would. */
export async function commitGroupOffsets(
  bootstrap: string,
  groupId: string,
  topic: string,
  offsets: Record<number, number>,
): Promise<void> {
  const admin = new Admin({ clientId: 'test', bootstrapBrokers: [bootstrap] });
  try {
    await admin.alterConsumerGroupOffsets({
      groupId,
      topics: [
        {
          name: topic,
          partitionOffsets: Object.entries(offsets).map(([p, o]) => ({ partition: Number(p), offset: BigInt(o) })),
        },
      ],
    });
  } finally {
    await admin.close();
  }
}

/** A producer of JSON values kept open across sends (a test that produces all along pays its setup once). */
export class JsonProducer {
  // Idempotent: a send retried under load (a request that timed out but was written) must not write its records twice.
  private readonly p: Producer;
  constructor(bootstrap: string) {
    this.p = new Producer({ clientId: 'test', bootstrapBrokers: [bootstrap], acks: -1, idempotent: true });
  }

  /** Produce `values` (keyed by `key(v)` when given) to `topic`, in batches of 1000. */
  async send<T>(topic: string, values: T[], key?: (v: T) => string, timestamp?: (v: T) => number): Promise<void> {
    for (let i = 0; i < values.length; i += 1000) {
      await this.p.send({
        messages: values.slice(i, i + 1000).map((v) => ({
          topic,
          key: key ? Buffer.from(key(v)) : undefined,
          value: Buffer.from(JSON.stringify(v)),
          ...(timestamp ? { timestamp: BigInt(timestamp(v)) } : {}),
        })),
      });
    }
  }

  close(): Promise<void> {
    return this.p.close();
  }
}

/** Produce JSON values (keyed by `key(v)` when given), in batches of 1000, with a producer of their own. */
export async function produceJson<T>(
  bootstrap: string,
  topic: string,
  values: T[],
  key?: (v: T) => string,
  timestamp?: (v: T) => number,
): Promise<void> {
  const p = new JsonProducer(bootstrap);
  try {
    await p.send(topic, values, key, timestamp);
  } finally {
    await p.close();
  }
}

export interface ReadRecord {
  partition: number;
  producerId: bigint;
  offset: bigint;
  key: string | null;
  value: string;
}

/**
 * Every record of `topic` up to its end, read committed, in partition and offset order. Fetches go over
 * a plain connection (Fetch v17): the library's own read_committed filter throws on some responses, and
 * this check must not share the connector's filtering.
 */
export async function readTopic(bootstrap: string, topic: string): Promise<ReadRecord[]> {
  const c = new Consumer({ clientId: 'test', groupId: 'test-reader', bootstrapBrokers: [bootstrap] });
  const conn = new Connection('test-reader');
  try {
    const md = await c.metadata({ topics: [topic], forceUpdate: true });
    const t = md.topics.get(topic)!;
    const ends = (await c.listOffsets({ topics: [topic], timestamp: -1n, isolationLevel: 1 })).get(topic)!;
    const broker = md.brokers.get(t.partitions[0]!.leader)!;
    await conn.connect(broker.host, broker.port);
    const out: ReadRecord[] = [];
    for (let p = 0; p < t.partitionsCount; p++) {
      let at = 0n;
      const aborted = new Set<bigint>();
      while (at < ends[p]!) {
        const r = await fetchV17.api.async(
          conn,
          100,
          1,
          4 << 20,
          1,
          0,
          -1,
          [
            {
              topicId: t.id,
              partitions: [
                {
                  partition: p,
                  fetchOffset: at,
                  partitionMaxBytes: 4 << 20,
                  currentLeaderEpoch: -1,
                  lastFetchedEpoch: -1,
                },
              ],
            },
          ],
          [],
          '',
        );
        const part = r.responses[0]!.partitions[0]!;
        for (const a of part.abortedTransactions ?? []) aborted.add(a.producerId);
        for (const b of part.records ?? []) {
          at = b.firstOffset + BigInt(b.lastOffsetDelta) + 1n;
          if (b.attributes & 0x20) continue; // a transaction marker
          // Each exactly-once transaction has a producer id of its own: one aborted is all aborted.
          if (b.attributes & 0x10 && aborted.has(b.producerId)) continue;
          for (const rec of b.records)
            out.push({
              partition: p,
              producerId: b.producerId,
              offset: b.firstOffset + BigInt(rec.offsetDelta),
              key: rec.key?.toString() ?? null,
              value: rec.value!.toString(),
            });
        }
      }
    }
    return out;
  } finally {
    await conn.close();
    await c.close();
  }
}

/** Kafka to Kafka, exactly once (test/fixtures/jobs/kafka-pipe.ts), and its parameters. */
export const KAFKA_PIPE_JOB = resolve(import.meta.dirname, '../fixtures/jobs/kafka-pipe.ts');
export const kafkaPipeParams = (
  bootstrap: string,
  input: string,
  output: string,
  rate: number,
): Record<string, string> => ({ bootstrap, in: input, out: output, prefix: output, rate: String(rate) });

/** Wait until the output holds `n` records and two more checkpoints completed; then it must stay exact. */
export async function assertKafkaExactlyOnce(
  pipe: Pipe,
  bootstrap: string,
  output: string,
  n: number,
  what: string,
): Promise<void> {
  const next = async (after: number): Promise<number> => {
    const id = await pipe.checkpointAfter(after);
    assert.ok(id !== undefined, `${what}: the Kafka pipe job reads without end, yet it finished`);
    return id;
  };
  let at = 0;
  for (;;) {
    const out = await readTopic(bootstrap, output);
    if (out.length > n) {
      const seen = new Map<number, ReadRecord>();
      const twice = out.filter((r) => {
        const id = (JSON.parse(r.value) as { id: number }).id;
        const first = seen.get(id);
        seen.set(id, r);
        return first !== undefined;
      });
      assert.fail(
        `${what}: ${out.length} records written for ${n} inputs; written twice, e.g. ${JSON.stringify(twice.slice(0, 3), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`,
      );
    }
    if (out.length === n) break;
    at = await next(at);
  }
  at = await next(await next(at));
  const ids = (await readTopic(bootstrap, output))
    .map((r) => (JSON.parse(r.value) as { id: number; doubled: number }).id)
    .sort((a, b) => a - b);
  assert.deepEqual(
    ids,
    Array.from({ length: n }, (_, i) => i),
    `${what}: each input id exactly once`,
  );
}
