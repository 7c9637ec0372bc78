/**
 * Kafka to Kafka, exactly once: orders `{ id, amount, currency }` from topic `in`, amounts converted to
 * euros, written to topic `out` keyed by id, one transaction per checkpoint. Run with checkpoints, or
 * the whole run is one transaction committed at its end:
 *
 *   clink run examples/kafka-pipeline.ts --checkpoint-dir /tmp/ckpt --checkpoint-interval-ms 2000 \
 *     --param bootstrap=127.0.0.1:9092 --param in=orders --param out=orders-eur
 *
 * See docs/connectors.md#kafka for a local broker.
 */
import { defineJob, type KafkaRecord } from 'clink';

interface Order {
  id: string;
  amount: number;
  currency: string;
}

const TO_EUR: Record<string, number> = { EUR: 1, USD: 0.92, GBP: 1.17 };

export default defineJob(
  {
    name: 'kafka-pipeline',
    version: '1',
    description: 'orders to euros, Kafka to Kafka, exactly once',
    guarantee: 'exactly-once',
  },
  (env) => {
    const bootstrapServers = env.params.bootstrap ?? '127.0.0.1:9092';
    env
      .fromSource<KafkaRecord<string, Order>>('kafka', {
        bootstrapServers,
        topic: env.params.in ?? 'orders',
        watermarks: { maxOutOfOrdernessMs: 5_000, idleTimeoutMs: 10_000 },
      })
      .uid('orders')
      .filter((r) => r.value !== null && TO_EUR[r.value.currency] !== undefined)
      .map((r) => ({
        id: r.value.id,
        eur: Math.round(r.value.amount * TO_EUR[r.value.currency]! * 100) / 100,
        at: r.timestamp,
      }))
      .sinkTo('kafka', {
        bootstrapServers,
        topic: env.params.out ?? 'orders-eur',
        keyField: 'id',
        delivery: 'exactly-once',
        transactionalIdPrefix: 'kafka-pipeline',
      })
      .uid('orders-eur');
  },
);
