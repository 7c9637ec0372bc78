/**
 * The NATS JetStream sink: each record published with a message id the stream deduplicates on (within
 * its duplicate_window), every publish acknowledged before a checkpoint completes. The id is the record's
 * messageIdField, or else `<prefix>-<subtask>-<epoch>-<n>`: the n-th record since the checkpoint the run
 * started from, which a restore replays under the same ids.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { z } from 'zod';
import { ConnectorError } from '../../errors.js';
import type { SinkContext, SinkWriter } from '../../sdk/index.js';
import { encode } from '../formats.js';
import { connectNatsRiding } from './client.js';
import { retrying } from '../options.js';
import type { NatsSinkOptions } from './options.js';

type Options = z.output<typeof NatsSinkOptions>;

const WHO = 'nats sink';

/** What a checkpoint records: the position the ids continue from. */
export interface NatsCommittable {
  epoch: number;
  n: number;
}

export async function createNatsWriter(o: Options, ctx: SinkContext): Promise<SinkWriter<unknown>> {
  const stopping = new AbortController();
  return new NatsWriter(o, ctx, await connectNatsRiding(o, WHO, stopping.signal), stopping);
}

/** A publish that may succeed again (the server restarting, or not answering yet): its message id makes a repeat harmless. */
function mayPassAgain(err: unknown): boolean {
  return /timeout|503|no responders|disconnect|reconnect|connection closed|CONNECTION_/i.test(
    (err as Error | undefined)?.message ?? '',
  );
}

class NatsWriter implements SinkWriter<unknown> {
  private readonly js: JetStreamClient;
  private readonly inFlight = new Set<Promise<unknown>>();
  private failure: unknown;
  /** Ids count from the checkpoint of a run's start: its id (0 for a fresh start) and the count there. */
  private epoch = 0;
  private n = 0;

  constructor(
    private readonly o: Options,
    private readonly ctx: SinkContext,
    private readonly nc: NatsConnection,
    private readonly stopping: AbortController,
  ) {
    this.js = jetstream(nc);
  }

  write(value: unknown): void {
    const id =
      this.o.messageIdField !== undefined
        ? `${this.o.messageIdPrefix}-${String((value as Record<string, unknown>)[this.o.messageIdField])}`
        : `${this.o.messageIdPrefix}-${this.ctx.subtaskIndex}-${this.epoch}-${this.n}`;
    this.n++;
    const data = encode(this.o.valueFormat, value) ?? new Uint8Array(0);
    // Published again under the same id while the server is away (up to reconnectTimeoutMs): the stream drops a repeat.
    const p: Promise<unknown> = retrying(() => this.js.publish(this.o.subject, data, { msgID: id }), {
      timeoutMs: this.o.reconnectTimeoutMs,
      signal: this.stopping.signal,
      retriable: mayPassAgain,
    }).then(
      () => void this.inFlight.delete(p),
      (err) => {
        this.inFlight.delete(p);
        this.failure ??= err;
      },
    );
    this.inFlight.add(p);
  }

  async flush(): Promise<void> {
    this.rethrow();
    while (this.inFlight.size >= this.o.maxPending) await Promise.race(this.inFlight);
    this.rethrow();
  }

  private async drain(): Promise<void> {
    await Promise.all(this.inFlight);
    this.rethrow();
  }

  async preCommit(): Promise<NatsCommittable> {
    await this.drain();
    return { epoch: this.epoch, n: this.n };
  }

  /** Nothing to commit: the publishes are acknowledged; the ids are what makes a replay harmless. */
  commit(): void {}

  /** After a restore: continue the ids from the checkpoint's position, so replayed records repeat them. */
  recover(committed: readonly unknown[]): void {
    const last = committed.at(-1) as NatsCommittable | undefined;
    if (last) {
      this.epoch = last.epoch;
      this.n = last.n;
    }
  }

  async finish(): Promise<void> {
    await this.drain();
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.nc.close().catch(() => undefined);
  }

  private rethrow(): void {
    if (this.failure === undefined) return;
    const err = this.failure as Error;
    this.failure = undefined;
    throw new ConnectorError(
      `${WHO}: publishing to '${this.o.subject}' at ${this.o.servers.join(',')} failed: ${err.message}${/no responders/i.test(err.message) ? '; no stream captures the subject: create one' : ''}`,
      { cause: err },
    );
  }
}
