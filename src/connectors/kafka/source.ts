/**
 * The Kafka source. Partition p of the topic belongs to subtask (p + start) % parallelism, `start`
 * spreading topics differently; a subtask looks for new partitions every partitionDiscoveryIntervalMs
 * and starts them from the log's start. The offsets it has emitted up to are its checkpoint position:
 * nothing is committed to the broker, so a restore replays exactly what followed the checkpoint.
 * Records of aborted transactions and the transaction markers are skipped under read_committed.
 */
import { Consumer, type RecordsBatch } from '@platformatic/kafka';
import type { z } from 'zod';
import { ownerOf } from './partitions.js';
import { ConnectorError } from '../../errors.js';
import type { SourceContext, SourceOutput, SourceReader } from '../../sdk/index.js';
import { decode } from '../formats.js';
import { Fetcher, type FetchResponse } from './fetcher.js';
import { RatePacer, retriesWithin, retryDelayMs } from '../options.js';
import type { KafkaSourceOptions } from './options.js';
import { forceClose, kafkaErrorName } from './transactions.js';

type Options = z.output<typeof KafkaSourceOptions>;

/** A record as the source emits it. */
export interface KafkaRecord<K = unknown, V = unknown> {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: K;
  value: V;
}

const IS_TRANSACTIONAL = 1 << 4;
const IS_CONTROL = 1 << 5;
const LATEST = -1n;
const EARLIEST = -2n;
const NO_TIMESTAMP = Number.NEGATIVE_INFINITY;

/** One partition this subtask reads. */
interface Split {
  partition: number;
  /** The offset after the last record emitted: what a checkpoint records. */
  next: bigint;
  /** Where the next fetch starts (ahead of `next` while fetched records wait to be emitted). */
  fetchAt: bigint;
  /** Bounded: the end offset seen at start. */
  stopAt?: bigint;
  /** The partition's end as the last fetch saw it (its last stable offset under read_committed). */
  end?: bigint;
  maxTimestamp: number;
  lastRecordAt: number;
  idle: boolean;
  /** Producers whose aborted transaction is being skipped. */
  aborted: Set<bigint>;
}

export function createKafkaReader(o: Options, ctx: SourceContext): SourceReader<KafkaRecord> {
  return new KafkaReader(o, ctx);
}

/** How often a reader asked for its lag asks the brokers for its partitions' ends. */
const LAG_REFRESH_MS = 2_000;

class KafkaReader implements SourceReader<KafkaRecord> {
  private readonly consumer: Consumer;
  private readonly splits = new Map<number, Split>();
  private restored: Record<string, string> | undefined;
  private started = false;
  private knownPartitions = 0;
  private lastDiscovery = 0;
  private pending: Promise<FetchResponse | undefined> | undefined;
  private queue: { split: Split; batch: RecordsBatch }[] = [];
  private queueAt = 0;
  private readonly isolation: number;
  private readonly pacer: RatePacer | undefined;
  private readonly fetcher: Fetcher;
  /** When the partitions' ends were last asked for (for the lag), and whether an ask is out. */
  private endsAt = 0;
  private endsInFlight = false;

  constructor(
    private readonly o: Options,
    private readonly ctx: SourceContext,
  ) {
    this.isolation = o.isolation === 'read_committed' ? 1 : 0;
    this.fetcher = new Fetcher(o.clientId, o.requestTimeoutMs);
    this.pacer = o.maxRecordsPerSecond === undefined ? undefined : new RatePacer(o.maxRecordsPerSecond, ctx.signal);
    this.consumer = new Consumer({
      clientId: o.clientId,
      groupId: o.groupId ?? `${o.clientId}-${ctx.operatorName}`,
      bootstrapBrokers: o.bootstrapServers,
      requestTimeout: o.requestTimeoutMs,
      retries: retriesWithin(o.reconnectTimeoutMs),
      retryDelay: (_client, _operation, attempt) => retryDelayMs(attempt),
    });
  }

  snapshot(): unknown {
    // A barrier can come before the first read took up the restored positions (a slow start after a
    // restore): those positions are still this subtask's, and a checkpoint without them would send a
    // later restore back to the earliest offsets, writing again what was committed.
    // Only the partitions it owns: after a rescale it was given every subtask's offsets.
    const offsets: Record<string, string> = {};
    for (const [p, o] of Object.entries(this.restored ?? {}))
      if (ownerOf(this.o.topic, Number(p), this.ctx.parallelism) === this.ctx.subtaskIndex) offsets[p] = o;
    for (const s of this.splits.values()) offsets[s.partition] = String(s.next);
    return { topic: this.o.topic, offsets };
  }

  /**
   * Records in its partitions not emitted yet. A fetch brings the partitions' ends, but a reader with a
   * full queue fetches seldom, so the ends are also asked for now and then (not awaited).
   */
  lag(): number {
    this.refreshEnds();
    let n = 0n;
    for (const s of this.splits.values()) if (s.end !== undefined && s.end > s.next) n += s.end - s.next;
    return Number(n);
  }

  private refreshEnds(): void {
    if (this.endsInFlight || this.splits.size === 0 || Date.now() - this.endsAt < LAG_REFRESH_MS) return;
    this.endsInFlight = true;
    const partitions = [...this.splits.keys()];
    this.offsets(partitions, LATEST)
      .then(
        (ends) => {
          for (const p of partitions) {
            const s = this.splits.get(p);
            const e = ends[p];
            if (s && e !== undefined && (s.end === undefined || e > s.end)) s.end = e;
          }
        },
        () => undefined, // the next fetch brings them anyway
      )
      .finally(() => {
        this.endsInFlight = false;
        this.endsAt = Date.now();
      });
  }

  restore(position: unknown): void {
    const p = position as { topic?: string; offsets?: Record<string, string> } | undefined;
    if (p?.offsets && p.topic === this.o.topic) this.restored = p.offsets;
  }

  async read(out: SourceOutput<KafkaRecord>, limit: number): Promise<'MORE' | 'END'> {
    const max = this.pacer ? await this.pacer.allowance(limit) : limit;
    if (!this.started) await this.start();
    else if (
      this.o.partitionDiscoveryIntervalMs > 0 &&
      Date.now() - this.lastDiscovery >= this.o.partitionDiscoveryIntervalMs
    )
      await this.discover();
    if (this.queueAt >= this.queue.length) {
      if (this.finished()) return 'END';
      const response = await (this.pending ?? this.fetch());
      this.pending = undefined;
      if (response) this.enqueue(response);
      // Fetch the next while these are emitted.
      if (!this.finished()) {
        const next = this.fetch();
        next.catch(() => undefined); // awaited by the next read, which rethrows
        this.pending = next;
      }
    }
    let emitted = 0;
    while (emitted < max && this.queueAt < this.queue.length) {
      const { split, batch } = this.queue[this.queueAt]!;
      const n = this.emitBatch(split, batch, out, max - emitted);
      emitted += n;
      if (this.batchDone) this.queueAt++;
    }
    this.pacer?.emitted(emitted);
    if (this.queueAt >= this.queue.length) {
      this.queue = [];
      this.queueAt = 0;
    }
    if (this.o.watermarks) this.emitWatermark(out);
    return 'MORE';
  }

  async close(): Promise<void> {
    await this.pending?.catch(() => undefined);
    await forceClose(this.consumer);
    await this.fetcher.close();
  }

  private finished(): boolean {
    if (!this.o.bounded) return false;
    for (const s of this.splits.values()) if (s.stopAt === undefined || s.next < s.stopAt) return false;
    return true;
  }

  private async start(): Promise<void> {
    this.started = true;
    await this.discover();
    if (this.o.bounded) {
      const ends = await this.offsets([...this.splits.keys()], LATEST);
      for (const s of this.splits.values()) s.stopAt = ends[s.partition] ?? 0n;
    }
  }

  /** Take the partitions this subtask owns that it does not read yet. */
  private async discover(): Promise<void> {
    this.lastDiscovery = Date.now();
    const count = await this.partitionCount();
    if (count <= this.knownPartitions) return;
    const fresh: number[] = [];
    for (let p = this.knownPartitions; p < count; p++)
      if (ownerOf(this.o.topic, p, this.ctx.parallelism) === this.ctx.subtaskIndex) fresh.push(p);
    // Partitions added while the job runs start at their beginning; those there at the start from startFrom.
    const initial = this.knownPartitions === 0;
    this.knownPartitions = count;
    if (fresh.length === 0) return;
    const starts = await this.startOffsets(fresh, initial);
    for (const p of fresh) {
      const at = starts[p]!;
      this.splits.set(p, {
        partition: p,
        next: at,
        fetchAt: at,
        maxTimestamp: NO_TIMESTAMP,
        lastRecordAt: Date.now(),
        idle: false,
        aborted: new Set(),
      });
    }
  }

  private async partitionCount(): Promise<number> {
    try {
      const md = await this.consumer.metadata({ topics: [this.o.topic], forceUpdate: true });
      return md.topics.get(this.o.topic)?.partitionsCount ?? 0;
    } catch (err) {
      if (kafkaErrorName(err) === 'UNKNOWN_TOPIC_OR_PARTITION' || /unknown topic/i.test((err as Error).message))
        throw new ConnectorError(
          `kafka source: topic '${this.o.topic}' does not exist at ${this.o.bootstrapServers.join(',')}; create it first`,
        );
      throw new ConnectorError(
        `kafka source: cannot read the metadata of '${this.o.topic}' from ${this.o.bootstrapServers.join(',')}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  private async startOffsets(partitions: number[], initial: boolean): Promise<Record<number, bigint>> {
    const out: Record<number, bigint> = {};
    const rest: number[] = [];
    for (const p of partitions) {
      const r = this.restored?.[p];
      if (r !== undefined) out[p] = BigInt(r);
      else rest.push(p);
    }
    if (rest.length === 0) return out;
    // After a restore, a partition the checkpoint does not know was added since: read it whole.
    const mode = initial && !this.restored ? this.o.startFrom : 'earliest';
    let found: Record<number, bigint>;
    if (mode === 'latest') found = await this.offsets(rest, LATEST);
    else if (mode === 'timestamp') found = await this.offsets(rest, BigInt(this.o.startTimestampMs!));
    else if (mode === 'group-offsets') found = await this.committed(rest);
    else found = await this.offsets(rest, EARLIEST);
    return { ...out, ...found };
  }

  private async offsets(partitions: number[], at: bigint): Promise<Record<number, bigint>> {
    const m = await this.consumer.listOffsets({
      topics: [this.o.topic],
      partitions: { [this.o.topic]: partitions },
      timestamp: at,
      isolationLevel: this.isolation,
    });
    const list = m.get(this.o.topic) ?? [];
    const out: Record<number, bigint> = {};
    for (const p of partitions) {
      const v = list[p];
      // No record at or after the timestamp: start at the end.
      out[p] = v === undefined || v < 0n ? (await this.offsets([p], LATEST))[p]! : v;
    }
    return out;
  }

  private async committed(partitions: number[]): Promise<Record<number, bigint>> {
    const m = await this.consumer.listCommittedOffsets({ topics: [{ topic: this.o.topic, partitions }] });
    const list = m.get(this.o.topic) ?? [];
    const out: Record<number, bigint> = {};
    const none: number[] = [];
    for (const p of partitions) {
      const v = list[p];
      if (v === undefined || v < 0n) none.push(p);
      else out[p] = v;
    }
    return none.length > 0 ? { ...out, ...(await this.offsets(none, EARLIEST)) } : out;
  }

  private async fetch(): Promise<FetchResponse | undefined> {
    const want = [...this.splits.values()].filter((s) => s.stopAt === undefined || s.fetchAt < s.stopAt);
    if (want.length === 0) {
      await new Promise((r) => setTimeout(r, this.o.fetchMaxWaitMs));
      return undefined;
    }
    // A broker restarting or leadership moving: refresh the metadata and try again, for up to reconnectTimeoutMs.
    const deadline = Date.now() + this.o.reconnectTimeoutMs;
    for (let delay = 100, refresh = false; ; delay = Math.min(delay * 2, 2_000), refresh = true) {
      try {
        return await this.fetchOnce(want, refresh);
      } catch (err) {
        if (this.ctx.signal.aborted) return undefined;
        if (err instanceof ConnectorError || Date.now() + delay > deadline) {
          if (err instanceof ConnectorError) throw err;
          throw new ConnectorError(
            `kafka source: fetching '${this.o.topic}' from ${this.o.bootstrapServers.join(',')} failed: ${kafkaErrorName(err) ?? (err as Error).message}`,
            { cause: err, transient: true },
          );
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  private async fetchOnce(want: Split[], refresh: boolean): Promise<FetchResponse> {
    const md = await this.consumer.metadata({ topics: [this.o.topic], forceUpdate: refresh || this.staleMetadata });
    this.staleMetadata = false;
    const topic = md.topics.get(this.o.topic)!;
    const byLeader = new Map<number, Split[]>();
    for (const s of want) {
      const leader = topic.partitions[s.partition]?.leader ?? -1;
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), s]);
    }
    // One broker per round keeps one request in flight; rounds rotate over the leaders.
    const [leader, splits] = [...byLeader.entries()][this.round++ % byLeader.size]!;
    const broker = md.brokers.get(leader);
    if (!broker) throw new Error(`partition ${splits[0]!.partition} has no leader`);
    const partitionMaxBytes = Math.max(64 << 10, Math.floor(this.o.fetchMaxBytes / splits.length));
    const request = this.fetcher.fetch(broker, {
      maxWaitMs: this.o.fetchMaxWaitMs,
      maxBytes: this.o.fetchMaxBytes,
      isolationLevel: this.isolation,
      topics: [
        {
          topicId: topic.id,
          partitions: splits.map((s) => ({
            partition: s.partition,
            fetchOffset: s.fetchAt,
            partitionMaxBytes,
            currentLeaderEpoch: -1,
            lastFetchedEpoch: -1,
          })),
        },
      ],
    });
    // Errors of single partitions come as a thrown response: enqueue() reads each partition's code.
    return request.catch((err: { response?: FetchResponse }) => {
      if (err.response?.errorCode === 0) return err.response;
      throw err;
    });
  }
  private round = 0;
  private staleMetadata = false;
  /** Set by emitBatch: the batch has nothing left to emit. */
  private batchDone = false;

  /** Queue the response's batches in order, skipping aborted transactions and markers. */
  private enqueue(response: FetchResponse): void {
    for (const t of response.responses) {
      for (const p of t.partitions) {
        const split = this.splits.get(p.partitionIndex);
        if (!split) continue;
        if (p.errorCode !== 0) {
          if (p.errorCode === 1) {
            throw new ConnectorError(
              `kafka source: offset ${split.fetchAt} of '${this.o.topic}' partition ${split.partition} is no longer in the log (retention removed it); restore from a newer checkpoint or start again`,
            );
          }
          this.staleMetadata = true; // leadership moved: ask for it again
          continue;
        }
        split.end = this.isolation === 1 && p.lastStableOffset >= 0n ? p.lastStableOffset : p.highWatermark;
        const aborted = [...(p.abortedTransactions ?? [])].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
        let ai = 0;
        for (const batch of p.records ?? []) {
          const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
          if (last < split.fetchAt) continue;
          split.fetchAt = last + 1n;
          while (ai < aborted.length && aborted[ai]!.firstOffset <= last) split.aborted.add(aborted[ai++]!.producerId);
          if (batch.attributes & IS_CONTROL) {
            // An abort marker (control type 0) ends the skipped range of its producer.
            if (batch.records[0]?.key?.readInt16BE(2) === 0) split.aborted.delete(batch.producerId);
            this.queue.push({ split, batch: { ...batch, records: [] } });
            continue;
          }
          if (this.isolation === 1 && batch.attributes & IS_TRANSACTIONAL && split.aborted.has(batch.producerId)) {
            this.queue.push({ split, batch: { ...batch, records: [] } });
            continue;
          }
          this.queue.push({ split, batch });
        }
      }
    }
  }

  /** Emit up to `max` of the batch's records after split.next; a batch may take several calls. */
  private emitBatch(split: Split, batch: RecordsBatch, out: SourceOutput<KafkaRecord>, max: number): number {
    const o = this.o;
    const end = batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n;
    this.batchDone = true;
    if (end <= split.next) return 0;
    // Offsets and timestamps fit a double: the per-record loop stays off BigInt.
    const first = Number(batch.firstOffset);
    const from = Number(split.next);
    const stop = split.stopAt === undefined ? Number.POSITIVE_INFINITY : Number(split.stopAt);
    const base = Number(batch.firstTimestamp);
    let n = 0;
    for (const r of batch.records) {
      const offset = first + r.offsetDelta;
      if (offset < from) continue;
      if (offset >= stop) break;
      if (n === max) {
        split.next = BigInt(offset);
        split.lastRecordAt = Date.now();
        this.batchDone = false;
        return n;
      }
      const timestamp = base + Number(r.timestampDelta);
      const value = decode(
        o.valueFormat,
        r.value,
        () => `kafka source: the value at '${o.topic}' partition ${split.partition} offset ${offset}`,
      );
      const key =
        r.key === null
          ? null
          : decode(
              o.keyFormat,
              r.key,
              () => `kafka source: the key at '${o.topic}' partition ${split.partition} offset ${offset}`,
            );
      out.collectWithTimestamp(
        { topic: o.topic, partition: split.partition, offset, timestamp, key, value },
        timestamp,
      );
      if (timestamp > split.maxTimestamp) split.maxTimestamp = timestamp;
      n++;
    }
    split.next = split.stopAt !== undefined && end > split.stopAt ? split.stopAt : end;
    if (n > 0) split.lastRecordAt = Date.now();
    return n;
  }

  /**
   * The minimum of the partitions' watermarks, idle ones left out. When every partition is idle nothing
   * holds event time back: it advances to the furthest a partition reached, and the source goes idle.
   */
  private emitWatermark(out: SourceOutput<KafkaRecord>): void {
    const { maxOutOfOrdernessMs, idleTimeoutMs } = this.o.watermarks!;
    const now = Date.now();
    let min = Number.POSITIVE_INFINITY;
    let max = NO_TIMESTAMP;
    let active = 0;
    for (const s of this.splits.values()) {
      if (s.maxTimestamp > max) max = s.maxTimestamp;
      if (idleTimeoutMs !== undefined && now - s.lastRecordAt >= idleTimeoutMs) continue;
      active++;
      if (s.maxTimestamp < min) min = s.maxTimestamp;
    }
    if (active === 0) {
      if (max !== NO_TIMESTAMP) out.emitWatermark(max - maxOutOfOrdernessMs - 1);
      out.markIdle(true);
      return;
    }
    out.markIdle(false);
    if (min !== NO_TIMESTAMP) out.emitWatermark(min - maxOutOfOrdernessMs - 1);
  }
}
