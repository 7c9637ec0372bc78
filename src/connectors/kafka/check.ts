/**
 * Before a job deploys: the brokers answer and the topic is there (SourceFactory/SinkFactory.check),
 * within the check's time. A refusal names the brokers and the option to fix.
 */
import { Admin } from '@platformatic/kafka';
import { ConnectorError } from '../../errors.js';
import type { ConnectorCheckContext } from '../../sdk/index.js';
import { kafkaErrorName } from './transactions.js';

export async function checkKafka(
  side: 'source' | 'sink',
  o: { bootstrapServers: string[]; topic: string; clientId: string },
  ctx: ConnectorCheckContext,
): Promise<void> {
  const brokers = o.bootstrapServers.join(',');
  const admin = new Admin({
    clientId: o.clientId,
    bootstrapBrokers: o.bootstrapServers,
    connectTimeout: ctx.timeoutMs,
    timeout: ctx.timeoutMs,
    retries: 0,
  });
  try {
    const md = await admin.metadata({ topics: [o.topic] });
    if (!md.topics.has(o.topic)) throw unknownTopic(side, o.topic, brokers);
  } catch (err) {
    if (err instanceof ConnectorError) throw err;
    const name = kafkaErrorName(err);
    if (name === 'UNKNOWN_TOPIC_OR_PARTITION' || /unknown topic/i.test(describe(err)))
      throw unknownTopic(side, o.topic, brokers);
    throw new ConnectorError(
      `kafka ${side}: cannot reach the brokers at ${brokers} (${name ?? describe(err)}); check the option bootstrapServers and that they run`,
      { cause: err },
    );
  } finally {
    await admin.close().catch(() => undefined);
  }
}

const unknownTopic = (side: string, topic: string, brokers: string): ConnectorError =>
  new ConnectorError(
    `kafka ${side}: topic '${topic}' does not exist at ${brokers}; create it first, or correct the option topic`,
  );

/** The innermost message: the library wraps connection errors in "failed N times" errors. */
function describe(err: unknown): string {
  const e = err as { message?: string; errors?: unknown[]; cause?: unknown };
  const inner = e.errors?.at(-1) ?? e.cause;
  return inner ? describe(inner) : (e.message ?? String(err));
}
