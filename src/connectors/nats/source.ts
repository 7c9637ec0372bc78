/**
 * The NATS JetStream source: an ordered consumer from the stream sequence after the last message
 * emitted, which is the checkpoint position; messages are pulled ahead into a bounded buffer.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import type { z } from 'zod';
import { ConnectorError } from '../../errors.js';
import type { SourceContext, SourceOutput, SourceReader } from '../../sdk/index.js';
import { decode } from '../formats.js';
import { connectNatsRiding } from './client.js';
import type { NatsSourceOptions } from './options.js';

type Options = z.output<typeof NatsSourceOptions>;

export interface NatsRecord<V = unknown> {
  subject: string;
  sequence: number;
  timestamp: number;
  value: V;
}

const WHO = 'nats source';

export async function createNatsReader(o: Options, ctx: SourceContext): Promise<SourceReader<NatsRecord>> {
  return new NatsReader(o, await connectNatsRiding(o, WHO, ctx.signal));
}

class NatsReader implements SourceReader<NatsRecord> {
  /** The stream sequence to read next. */
  private next: number | undefined;
  private lastAtStart = 0;
  private messages: ConsumerMessages | undefined;
  private iterator: AsyncIterator<JsMsg> | undefined;
  private pending: Promise<IteratorResult<JsMsg>> | undefined;
  private ended = false;

  constructor(
    private readonly o: Options,
    private readonly nc: NatsConnection,
  ) {}

  snapshot(): unknown {
    return { next: this.next };
  }

  restore(position: unknown): void {
    const next = (position as { next?: number } | undefined)?.next;
    if (typeof next === 'number') this.next = next;
  }

  private async start(): Promise<void> {
    const jsm = await jetstreamManager(this.nc);
    let info;
    try {
      info = await jsm.streams.info(this.o.stream);
    } catch (err) {
      throw new ConnectorError(
        `${WHO}: stream '${this.o.stream}' not found at ${this.o.servers.join(',')} (${(err as Error).message}); create it first`,
        { cause: err },
      );
    }
    this.lastAtStart = info.state.last_seq;
    if (this.next === undefined) {
      if (this.o.startFrom === 'new') this.next = info.state.last_seq + 1;
      else if (this.o.startFrom === 'sequence') this.next = this.o.startSequence!;
      else this.next = Math.max(1, info.state.first_seq);
    }
    if (this.o.bounded && this.next > this.lastAtStart) {
      this.ended = true;
      return;
    }
    const consumer = await jetstream(this.nc).consumers.get(this.o.stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.next,
      ...(this.o.subject ? { filter_subjects: this.o.subject } : {}),
    });
    this.messages = await consumer.consume({ max_messages: this.o.bufferMessages });
    this.iterator = this.messages[Symbol.asyncIterator]();
  }

  async read(out: SourceOutput<NatsRecord>, max: number): Promise<'MORE' | 'END'> {
    if (!this.iterator && !this.ended) await this.start();
    let n = 0;
    while (n < max && !this.ended) {
      // Wait for the first message of a read (up to 100 ms: barriers must not wait long); take the rest as they are there.
      const next = (this.pending ??= this.iterator!.next());
      const r =
        n === 0
          ? await Promise.race([next, new Promise<undefined>((res) => setTimeout(() => res(undefined), 100))])
          : await Promise.race([next, Promise.resolve(undefined)]);
      if (r === undefined) break;
      this.pending = undefined;
      if (r.done) {
        // The consumer ends only when its connection closed for good (reconnectTimeoutMs spent): that is
        // a failure, never the end of the stream, which would finish the job without the rest of it.
        throw new ConnectorError(
          `${WHO}: the connection to ${this.o.servers.join(',')} closed while reading stream '${this.o.stream}' (no server came back within ${this.o.reconnectTimeoutMs} ms)`,
          { transient: true },
        );
      }
      const m = r.value;
      const where = (): string => `${WHO}: message ${m.seq} of stream '${this.o.stream}'`;
      const timestamp = Math.floor(Number(m.info.timestampNanos) / 1e6);
      out.collectWithTimestamp(
        { subject: m.subject, sequence: m.seq, timestamp, value: decode(this.o.valueFormat, m.data, where) },
        timestamp,
      );
      this.next = m.seq + 1;
      n++;
      if (this.o.bounded && (m.seq >= this.lastAtStart || m.info.pending === 0)) this.ended = true;
    }
    return this.ended ? 'END' : 'MORE';
  }

  async close(): Promise<void> {
    // stop(), not close(): close() waits for the pull in flight, which may never be answered.
    this.messages?.stop();
    await this.nc.close().catch(() => undefined);
  }
}
