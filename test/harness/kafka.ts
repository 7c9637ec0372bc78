// Test helpers for a real Kafka broker: create topics, produce, and read a topic back whole (read
// committed: what a downstream consumer would see), through the same client library the connector uses.
import assert from 'node:assert/strict';
import { Admin, Consumer, Producer, type fetchV17 } from '@platformatic/kafka';

export function kafkaBootstrap(): string {
  const b = process.env.CLINK_TEST_KAFKA;
  assert.ok(b, 'CLINK_TEST_KAFKA names the Kafka broker these tests use: run them with npm run test:services, which starts one');
  return b;
}

let seq = 0;
/** A topic name no other test uses. */
export function topicName(what: string): string {
  return `${what}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
}

export async function createTopic(bootstrap: string, topic: string, partitions: number): Promise<void> {
  const admin = new Admin({ clientId: 'test', bootstrapBrokers: [bootstrap] });
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
  } finally {
    await admin.close();
  }
}

export async function addPartitions(bootstrap: string, topic: string, total: number): Promise<void> {
  const admin = new Admin({ clientId: 'test', bootstrapBrokers: [bootstrap] });
  try {
    await admin.createPartitions({ topics: [{ name: topic, count: total }] });
  } finally {
    await admin.close();
  }
}

/** Produce JSON values (keyed by `key(v)` when given), in batches of 1000. */
export async function produceJson<T>(bootstrap: string, topic: string, values: T[], key?: (v: T) => string, timestamp?: (v: T) => number): Promise<void> {
  const p = new Producer({ clientId: 'test', bootstrapBrokers: [bootstrap], acks: -1 });
  try {
    for (let i = 0; i < values.length; i += 1000) {
      await p.send({
        messages: values.slice(i, i + 1000).map((v) => ({
          topic,
          key: key ? Buffer.from(key(v)) : undefined,
          value: Buffer.from(JSON.stringify(v)),
          ...(timestamp ? { timestamp: BigInt(timestamp(v)) } : {}),
        })),
      });
    }
  } finally {
    await p.close();
  }
}

export interface ReadRecord {
  partition: number;
  offset: bigint;
  key: string | null;
  value: string;
}

/** Every record of `topic` up to its end, read committed, in partition and offset order. */
export async function readTopic(bootstrap: string, topic: string): Promise<ReadRecord[]> {
  const c = new Consumer({ clientId: 'test', groupId: 'test-reader', bootstrapBrokers: [bootstrap] });
  try {
    const md = await c.metadata({ topics: [topic], forceUpdate: true });
    const t = md.topics.get(topic)!;
    const ends = (await c.listOffsets({ topics: [topic], timestamp: -1n, isolationLevel: 1 })).get(topic)!;
    const out: ReadRecord[] = [];
    for (let p = 0; p < t.partitionsCount; p++) {
      let at = 0n;
      const aborted = new Set<bigint>();
      while (at < ends[p]!) {
        const r: fetchV17.FetchResponse = await c.fetch({
          node: t.partitions[p]!.leader,
          topics: [{ topicId: t.id, partitions: [{ partition: p, fetchOffset: at, partitionMaxBytes: 4 << 20, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }] }],
          maxWaitTime: 100,
          minBytes: 1,
          maxBytes: 4 << 20,
          isolationLevel: 1,
        });
        const part = r.responses[0]!.partitions[0]!;
        for (const a of part.abortedTransactions ?? []) aborted.add(a.producerId);
        for (const b of part.records ?? []) {
          at = b.firstOffset + BigInt(b.lastOffsetDelta) + 1n;
          if (b.attributes & 0x20) continue; // a transaction marker
          if (b.attributes & 0x10 && aborted.has(b.producerId)) continue;
          for (const rec of b.records) out.push({ partition: p, offset: b.firstOffset + BigInt(rec.offsetDelta), key: rec.key?.toString() ?? null, value: rec.value!.toString() });
        }
      }
    }
    return out;
  } finally {
    await c.close();
  }
}
