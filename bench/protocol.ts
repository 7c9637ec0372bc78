/**
 * Codec throughput: encode and decode of a Deploy, a Heartbeat and a 1,000-record data batch (msgpack,
 * and columns: design record 018), in frames/s (and MB/s for the batch). Prints one JSON line per case.
 */
import { fileURLToPath } from 'node:url';
import {
  decodeFrame,
  decodeRecordBatch,
  encodeFrame,
  encodeRecordBatch,
  makeMessage,
  type Message,
} from '../src/protocol/index.js';
import { NO_CHECKPOINTS } from '../src/client/index.js';

export interface ThroughputResult {
  name: string;
  bytes: number;
  encodePerSec: number;
  decodePerSec: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function rate(fn: () => void, minMs = 300): number {
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < minMs) {
    for (let i = 0; i < 100; i++) fn();
    n += 100;
    t = performance.now();
  }
  return n / ((t - t0) / 1000);
}

function measure(name: string, enc: () => Buffer, dec: (b: Buffer) => unknown): ThroughputResult {
  const sample = enc();
  rate(enc, 200);
  rate(() => dec(sample), 200);
  const e: number[] = [];
  const d: number[] = [];
  for (let r = 0; r < 5; r++) {
    e.push(rate(enc));
    d.push(rate(() => dec(sample)));
  }
  return { name, bytes: sample.length, encodePerSec: median(e), decodePerSec: median(d) };
}

const checkpoint = { ...NO_CHECKPOINTS, checkpointDir: '/ckpt', intervalMs: 10_000 };
const deploy: Message = makeMessage('Deploy', {
  jobId: 'job-7f3a',
  jobName: 'sensor-stats',
  specJson: JSON.stringify({
    operators: Array.from({ length: 8 }, (_, i) => ({ id: `_inline_map_${i}`, type: 'map', parallelism: 4 })),
  }),
  tasks: Array.from({ length: 8 }, (_, i) => ({
    taskId: `_inline_source_${i % 2}`,
    subtaskIndex: i,
    parallelism: 8,
    chainJson: JSON.stringify([{ id: `_inline_map_${i}`, type: 'map' }]),
    keyGroupStart: i * 16,
    keyGroupEnd: i * 16 + 15,
    restoreCheckpointId: 0,
    restoreParallelism: 0,
    attempt: 0,
  })),
  modules: [{ sha256: 'ab'.repeat(32), bytes: new Uint8Array(0), sourceMap: new Uint8Array(0) }],
  checkpoint,
  epoch: 3,
});
const heartbeat: Message = makeMessage('Heartbeat', { seq: 123_456, sentAtMs: Date.now(), runningSubtasks: 4 });
const channels = ['Google', 'Facebook', 'Baidu', 'Apple'];
const bids = Array.from({ length: 1_000 }, (_, i) => ({
  auction: 1_000 + (i % 1_000),
  bidder: 2_000 + ((i * 7) % 5_000),
  price: 100 + ((i * 31) % 10_000),
  channel: channels[i & 3]!,
  url: `https://www.nexmark.com/${channels[i & 3]}/item.htm?query=${i}`,
  dateTime: 1_700_000_000_000 + i,
}));
const timestamps = bids.map((b) => b.dateTime);
// A window fire's results (q5's counts): start, end and timestamp the same for every record.
const windowResults = Array.from({ length: 1_000 }, (_, i) => ({
  key: 1_000 + ((i * 7_919) % 50_000),
  count: 1 + (i % 13),
  start: 1_700_000_000_000,
  end: 1_700_000_010_000,
}));
const windowStamps = windowResults.map((r) => r.end - 1);
// A pre-aggregation's partials ([auction, count]) of one pane: one timestamp.
const partials = windowResults.map((r) => [r.key, r.count]);

export function runProtocolBench(): ThroughputResult[] {
  return [
    measure(
      'Deploy frame (8 tasks)',
      () => encodeFrame(deploy),
      (b) => decodeFrame(b),
    ),
    measure(
      'Heartbeat frame',
      () => encodeFrame(heartbeat),
      (b) => decodeFrame(b),
    ),
    measure(
      'record batch (1,000 bids)',
      () => encodeRecordBatch(bids, timestamps),
      (b) => decodeRecordBatch(b),
    ),
    measure(
      'record batch (1,000 bids) as columns',
      () => encodeRecordBatch(bids, timestamps, { columns: true }),
      (b) => decodeRecordBatch(b),
    ),
    measure(
      'record batch (1,000 window results) as columns',
      () => encodeRecordBatch(windowResults, windowStamps, { columns: true }),
      (b) => decodeRecordBatch(b),
    ),
    measure(
      'record batch (1,000 window results) as columns with constants',
      () => encodeRecordBatch(windowResults, windowStamps, { columns: true, constants: true }),
      (b) => decodeRecordBatch(b),
    ),
    measure(
      'record batch (1,000 partials [key, count])',
      () => encodeRecordBatch(partials, windowStamps, { columns: true, constants: true }),
      (b) => decodeRecordBatch(b),
    ),
    measure(
      'record batch (1,000 partials [key, count]) as tuples',
      () => encodeRecordBatch(partials, windowStamps, { columns: true, constants: true, tuples: true }),
      (b) => decodeRecordBatch(b),
    ),
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--run') {
  for (const r of runProtocolBench()) process.stdout.write(JSON.stringify(r) + '\n');
}
