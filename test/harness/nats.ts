// Test helpers for a real NATS JetStream server: the address npm run test:services passes, streams,
// publishing and reading a stream back whole.
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';

export function natsServer(): string {
  const s = process.env.CLINK_TEST_NATS;
  assert.ok(
    s,
    'CLINK_TEST_NATS names the NATS server these tests use: run them with npm run test:services, which starts one',
  );
  return s;
}

let seq = 0;
export function streamName(what: string): string {
  return `${what}_${process.pid}_${Date.now().toString(36)}_${seq++}`.toUpperCase();
}

async function withNats<T>(server: string, fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: server });
  try {
    return await fn(nc);
  } finally {
    await nc.close();
  }
}

/** A stream capturing `<name>.>`, deduplicating message ids over two minutes. */
export function createStream(server: string, name: string): Promise<void> {
  return withNats(server, async (nc) => {
    await (await jetstreamManager(nc)).streams.add({ name, subjects: [`${name}.>`], duplicate_window: 120e9 });
  });
}

export function publishJson(server: string, subject: string, values: unknown[]): Promise<void> {
  return withNats(server, async (nc) => {
    const js = jetstream(nc);
    for (let i = 0; i < values.length; i += 500)
      await Promise.all(values.slice(i, i + 500).map((v) => js.publish(subject, JSON.stringify(v))));
  });
}

/** How many messages the stream holds. */
export function streamCount(server: string, name: string): Promise<number> {
  return withNats(server, async (nc) => (await (await jetstreamManager(nc)).streams.info(name)).state.messages);
}

/** Every message of the stream, in order. */
export function readStream(server: string, name: string): Promise<{ seq: number; value: unknown }[]> {
  return withNats(server, async (nc) => {
    const info = await (await jetstreamManager(nc)).streams.info(name);
    const out: { seq: number; value: unknown }[] = [];
    if (info.state.messages === 0) return out;
    const c = await jetstream(nc).consumers.get(name, { deliver_policy: DeliverPolicy.All });
    const messages = await c.consume();
    for await (const m of messages) {
      out.push({ seq: m.seq, value: m.json() });
      if (m.seq >= info.state.last_seq) break;
    }
    await messages.close();
    return out;
  });
}
