/**
 * NATS JetStream in and out: messages of stream ORDERS (subjects `ORDERS.>`) replayed from the start,
 * the large ones republished on subject `BIG.orders`, deduplicated by order id:
 *
 *   nats stream add ORDERS --subjects 'ORDERS.>'; nats stream add BIG --subjects 'BIG.>'
 *   clink run examples/nats-relay.ts --checkpoint-dir /tmp/ckpt --checkpoint-interval-ms 2000 --param servers=127.0.0.1:4222
 */
import { defineJob, type NatsRecord } from 'clink';

export default defineJob(
  { name: 'nats-relay', version: '1', description: 'large orders from one JetStream stream to another' },
  (env) => {
    const servers = env.params.servers ?? '127.0.0.1:4222';
    env
      .fromSource<NatsRecord<{ id: string; amount: number }>>('nats', { servers, stream: 'ORDERS' })
      .uid('orders')
      .filter((m) => m.value.amount >= Number(env.params.threshold ?? 1000))
      .map((m) => m.value)
      .sinkTo('nats', { servers, subject: 'BIG.orders', messageIdPrefix: 'nats-relay', messageIdField: 'id' });
  },
);
