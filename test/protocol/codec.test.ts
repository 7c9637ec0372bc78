import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  CLIENT_REQUEST_KINDS,
  decodeFrame,
  decodeMessage,
  encodeFrame,
  encodeMessage,
  FrameDecodeError,
  MessageBuilder,
  MESSAGES,
  MessageKind,
  makeMessage,
  MessageReader,
  type Codec,
  type Fields,
  type Message,
  type MessageOf,
} from '../../src/protocol/index.js';
import { arbitraryMessage, MESSAGE_NAMES, sampleMessage, sampleOf } from './gen.js';

const VECTORS = new URL('../vectors/', import.meta.url);

describe('message kinds', () => {
  test('every kind the reference names exists, with the reference’s fixed numbers', () => {
    const named = [
      'Register',
      'RegisterAck',
      'HelloClient',
      'SubmitJob',
      'SubmitJobAck',
      'ListJobs',
      'ListJobsReply',
      'CancelJob',
      'RescaleJob',
      'RescaleOperator',
      'Savepoint',
      'Deploy',
      'SubtaskListening',
      'PeerUpdate',
      'StartJob',
      'SubtaskFinished',
      'JobCompleted',
      'Heartbeat',
      'HeartbeatAck',
      'TriggerCheckpoint',
      'SubtaskCheckpointed',
      'CommitCheckpoint',
      'AbortCheckpoint',
      'RequestFinalCheckpoint',
      'FinalCheckpointAssigned',
      'BeginRescale',
      'BeginRescaleAck',
      'CutoverRebind',
      'CutoverPeerUpdate',
    ];
    for (const n of named) assert.ok(n in MESSAGES, `${n} is missing`);
    assert.equal(MessageKind.RescaleOperator, 12);
    assert.equal(MessageKind.Savepoint, 13);
    assert.equal(MessageKind.CancelJob, 103);
    assert.equal(MESSAGES.CancelJob.direction, 'both');
  });

  test('kinds are unique, and so are client request kinds', () => {
    const kinds = Object.values(MESSAGES).map((d) => d.kind);
    assert.equal(new Set(kinds).size, kinds.length);
    assert.equal(new Set(CLIENT_REQUEST_KINDS).size, CLIENT_REQUEST_KINDS.length);
    assert.deepEqual(
      [...CLIENT_REQUEST_KINDS].sort((a, b) => a - b),
      [10, 11, 12, 13, 14, 15, 103],
    );
  });

  test('every coordinator-to-worker message carries the epoch as a tail defaulting to 0 (unfenced)', () => {
    for (const [name, def] of Object.entries(MESSAGES)) {
      if (def.direction !== 'coordinator->worker' && name !== 'CancelJob') continue;
      const f = (def.fields as Fields).epoch;
      assert.ok(f, `${name} has an epoch`);
      assert.equal(f.tail, true);
      assert.equal(f.default, 0);
    }
  });
});

describe('golden vectors', () => {
  for (const name of MESSAGE_NAMES) {
    test(`${name} encodes to the bytes pinned in test/vectors/${name}.hex`, async () => {
      const frame = encodeFrame(sampleMessage(name));
      const file = new URL(`${name}.hex`, VECTORS);
      if (process.env.UPDATE_VECTORS === '1') await writeFile(file, frame.toString('hex') + '\n');
      const pinned = (await readFile(file, 'utf8')).trim();
      assert.equal(
        frame.toString('hex'),
        pinned,
        `${name}: encoding changed; an encoding change must only append (see docs/protocol.md)`,
      );
      assert.deepEqual(decodeFrame(Buffer.from(pinned, 'hex')), sampleMessage(name));
    });
  }

  test('there is one vector file per kind and none for a kind that does not exist', async () => {
    const files = (await readdir(VECTORS)).filter((f) => f.endsWith('.hex')).map((f) => f.slice(0, -4));
    assert.deepEqual(files.sort(), [...MESSAGE_NAMES].sort());
  });
});

describe('round trips', () => {
  test('decode(encode(m)) is m for every kind (property)', () => {
    fc.assert(
      fc.property(arbitraryMessage, (m) => {
        assert.deepEqual(decodeFrame(encodeFrame(m)), m);
        assert.deepEqual(decodeMessage(encodeMessage(m)), m);
      }),
      { numRuns: 3_000 },
    );
  });

  test('makeMessage fills tail fields with their defaults and refuses a missing required field', () => {
    const hb = makeMessage('Heartbeat', { seq: 9 });
    assert.deepEqual(hb, {
      type: 'Heartbeat',
      seq: 9,
      sentAtMs: 0,
      runningSubtasks: 0,
      jobs: [],
      leaving: false,
      subtasks: [],
    });
    assert.throws(() => makeMessage('Heartbeat', {} as { seq: number }), /Heartbeat\.seq is required/);
  });
});

/** The payload of `m` written with only its required fields and the first `tails` tail fields. */
function encodePrefix(m: Message, tails: number): Buffer {
  const def = MESSAGES[m.type];
  const b = new MessageBuilder();
  b.u8(def.kind);
  let t = 0;
  for (const [k, f] of Object.entries(def.fields as Fields)) {
    if (f.tail && t++ >= tails) break;
    f.codec.write(b, (m as unknown as Record<string, unknown>)[k]);
  }
  return Buffer.from(b.view());
}

describe('the additive-tail idiom', () => {
  for (const name of MESSAGE_NAMES) {
    const fields = Object.entries(MESSAGES[name].fields as Fields);
    const tails = fields.filter(([, f]) => f.tail);
    if (tails.length === 0) continue;
    test(`${name}: every older layout (a prefix ending at a field boundary) decodes with defaults for what it lacks`, () => {
      const full = sampleMessage(name) as unknown as Record<string, unknown>;
      for (let k = 0; k <= tails.length; k++) {
        const decoded = decodeMessage(encodePrefix(full as unknown as Message, k)) as unknown as Record<
          string,
          unknown
        >;
        const expected = { ...full };
        tails.slice(k).forEach(([key, f]) => (expected[key] = f.default));
        assert.deepEqual(decoded, expected, `${name} with ${k} of ${tails.length} tail fields`);
      }
    });
  }

  /** Tail fields a message gained after those pinned frames were made: they decode to their defaults. */
  // What a Deploy has gained since those vectors were pinned: the data secret, and each task's restore parallelism.
  // What SubmitJob and Deploy have gained since those vectors were pinned (decoded with their defaults).
  /** What CheckpointConfig gained after all of them: how checkpoints are paced (timeout, pause, tolerance). */
  const PACING_DEFAULTS = {
    timeoutMs: 0,
    minPauseMs: 0,
    tolerableFailures: -1,
    alignedTimeoutMs: 0,
    stateBackendType: 'default',
  };
  const addedSince = (name: 'SubmitJob' | 'Deploy'): object =>
    name === 'Deploy'
      ? {
          dataSecret: '',
          tasks: (sampleMessage('Deploy') as MessageOf<'Deploy'>).tasks.map((t) => ({ ...t, restoreParallelism: 0 })),
        }
      : { autoscaleMin: 0, autoscaleMax: 0 };

  test('a SubmitJob pinned before CheckpointConfig.checkpointsRetained existed decodes, keeping 1 checkpoint', async () => {
    const old = Buffer.from(
      (await readFile(new URL('legacy/SubmitJob-before-checkpointsRetained.hex', VECTORS), 'utf8')).trim(),
      'hex',
    );
    const sample = sampleMessage('SubmitJob') as MessageOf<'SubmitJob'>;
    assert.deepEqual(decodeFrame(old), {
      ...sample,
      ...addedSince('SubmitJob'),
      checkpoint: {
        ...sample.checkpoint,
        checkpointsRetained: 1,
        maxRestarts: -1,
        allowNonRestoredState: false,
        allowDuplicatesOnFallback: false,
        ...PACING_DEFAULTS,
      },
    });
  });

  for (const name of ['SubmitJob', 'Deploy'] as const) {
    test(`a ${name} pinned before CheckpointConfig.maxRestarts existed decodes, taking the coordinator's default retries`, async () => {
      const old = Buffer.from(
        (await readFile(new URL(`legacy/${name}-before-maxRestarts.hex`, VECTORS), 'utf8')).trim(),
        'hex',
      );
      const sample = sampleMessage(name) as MessageOf<'SubmitJob' | 'Deploy'>;
      assert.deepEqual(decodeFrame(old), {
        ...sample,
        ...addedSince(name),
        checkpoint: {
          ...sample.checkpoint,
          maxRestarts: -1,
          allowNonRestoredState: false,
          allowDuplicatesOnFallback: false,
          ...PACING_DEFAULTS,
        },
      });
    });
  }

  for (const name of ['SubmitJob', 'Deploy'] as const) {
    test(`a ${name} pinned before CheckpointConfig.allowNonRestoredState existed decodes, refusing to drop state`, async () => {
      const old = Buffer.from(
        (await readFile(new URL(`legacy/${name}-before-allowNonRestoredState.hex`, VECTORS), 'utf8')).trim(),
        'hex',
      );
      const sample = sampleMessage(name) as MessageOf<'SubmitJob' | 'Deploy'>;
      assert.deepEqual(decodeFrame(old), {
        ...sample,
        ...addedSince(name),
        checkpoint: {
          ...sample.checkpoint,
          allowNonRestoredState: false,
          allowDuplicatesOnFallback: false,
          ...PACING_DEFAULTS,
        },
      });
    });

    test(`a ${name} pinned before CheckpointConfig.timeoutMs existed decodes with the default pacing: timeout max(10 s, 10 intervals), no pause, any failures tolerated`, async () => {
      const old = Buffer.from(
        (await readFile(new URL(`legacy/${name}-before-timeoutMs.hex`, VECTORS), 'utf8')).trim(),
        'hex',
      );
      const sample = sampleMessage(name) as MessageOf<'SubmitJob' | 'Deploy'>;
      assert.deepEqual(decodeFrame(old), { ...sample, checkpoint: { ...sample.checkpoint, ...PACING_DEFAULTS } });
    });

    test(`a ${name} pinned before CheckpointConfig.alignedTimeoutMs existed decodes with no aligned timeout (its alignment as it said)`, async () => {
      const old = Buffer.from(
        (await readFile(new URL(`legacy/${name}-before-alignedTimeoutMs.hex`, VECTORS), 'utf8')).trim(),
        'hex',
      );
      const sample = sampleMessage(name) as MessageOf<'SubmitJob' | 'Deploy'>;
      assert.deepEqual(decodeFrame(old), {
        ...sample,
        checkpoint: { ...sample.checkpoint, alignedTimeoutMs: 0, stateBackendType: 'default' },
      });
    });

    test(`a ${name} pinned before CheckpointConfig.stateBackendType existed decodes as leaving the state backend to the cluster`, async () => {
      const old = Buffer.from(
        (await readFile(new URL(`legacy/${name}-before-stateBackendType.hex`, VECTORS), 'utf8')).trim(),
        'hex',
      );
      const sample = sampleMessage(name) as MessageOf<'SubmitJob' | 'Deploy'>;
      assert.deepEqual(decodeFrame(old), {
        ...sample,
        checkpoint: { ...sample.checkpoint, stateBackendType: 'default' },
      });
    });
  }

  test('a DataCredit pinned before DataCredit.columns existed decodes as a receiver that reads no columns', async () => {
    const old = Buffer.from(
      (await readFile(new URL('legacy/DataCredit-before-columns.hex', VECTORS), 'utf8')).trim(),
      'hex',
    );
    assert.deepEqual(decodeFrame(old), {
      ...sampleMessage('DataCredit'),
      columns: false,
      constants: false,
      tuples: false,
      batchLimit: 0,
    });
  });

  test('a DataCredit pinned before DataCredit.constants existed decodes as a receiver that reads columns but no constants', async () => {
    const old = Buffer.from(
      (await readFile(new URL('legacy/DataCredit-before-constants.hex', VECTORS), 'utf8')).trim(),
      'hex',
    );
    const sample = sampleMessage('DataCredit') as MessageOf<'DataCredit'>;
    assert.deepEqual(decodeFrame(old), {
      ...sample,
      columns: sample.columns,
      constants: false,
      tuples: false,
      batchLimit: 0,
    });
  });

  test('a DataCredit pinned before DataCredit.tuples existed decodes as a receiver that reads columns and constants but no tuples', async () => {
    const old = Buffer.from(
      (await readFile(new URL('legacy/DataCredit-before-tuples.hex', VECTORS), 'utf8')).trim(),
      'hex',
    );
    const sample = sampleMessage('DataCredit') as MessageOf<'DataCredit'>;
    assert.deepEqual(decodeFrame(old), {
      ...sample,
      columns: sample.columns,
      constants: sample.constants,
      tuples: false,
      batchLimit: 0,
    });
  });

  test('a DataCredit pinned before DataCredit.batchLimit existed decodes as a receiver that asks for no batch size', async () => {
    const old = Buffer.from(
      (await readFile(new URL('legacy/DataCredit-before-batchLimit.hex', VECTORS), 'utf8')).trim(),
      'hex',
    );
    assert.deepEqual(decodeFrame(old), { ...sampleMessage('DataCredit'), batchLimit: 0 });
  });

  test('a Heartbeat pinned before SubtaskProgress.ageMs existed decodes with age 0 (measured over its arrival)', async () => {
    const old = Buffer.from(
      (await readFile(new URL('legacy/Heartbeat-before-ageMs.hex', VECTORS), 'utf8')).trim(),
      'hex',
    );
    const sample = sampleMessage('Heartbeat') as MessageOf<'Heartbeat'>;
    assert.deepEqual(decodeFrame(old), {
      ...sample,
      subtasks: sample.subtasks.map((s) => ({ ...s, ageMs: 0, stateExpired: 0 })),
    });
  });

  test('a Heartbeat pinned before SubtaskProgress.stateExpired existed decodes with nothing expired', async () => {
    const old = Buffer.from(
      (await readFile(new URL('legacy/Heartbeat-before-stateExpired.hex', VECTORS), 'utf8')).trim(),
      'hex',
    );
    const sample = sampleMessage('Heartbeat') as MessageOf<'Heartbeat'>;
    assert.deepEqual(decodeFrame(old), {
      ...sample,
      subtasks: sample.subtasks.map((s) => ({ ...s, stateExpired: 0 })),
    });
  });

  test('a newer peer’s extra trailing bytes are ignored by this decoder', () => {
    const m = makeMessage('Heartbeat', { seq: 3, sentAtMs: 10, runningSubtasks: 2 });
    const longer = Buffer.concat([encodeMessage(m), Buffer.from([0, 0, 0, 9, 1, 2, 3])]);
    assert.deepEqual(decodeMessage(longer), m);
  });

  test('a struct from an older peer (without its tail fields) decodes with defaults', () => {
    const task = MESSAGES.Deploy.fields.tasks.codec.desc as { t: 'list'; of: Codec<unknown> };
    const fields = (task.of.desc as { fields: Fields }).fields;
    const sample = sampleOf(task.of, 'task') as Record<string, unknown>;
    const b = new MessageBuilder();
    const at = b.reserveU32();
    for (const [k, f] of Object.entries(fields)) if (!f.tail) f.codec.write(b, sample[k]);
    b.patchU32(at, b.length - 4);
    const decoded = task.of.read(new MessageReader(b.view()), 'task') as Record<string, unknown>;
    assert.deepEqual(decoded, { ...sample, attempt: 0, restoreParallelism: 0 });
  });
});

describe('malformed input', () => {
  test('a 10-byte frame claiming 2^31 elements is refused at once', () => {
    // ListJobsReply (21): a jobs count of 2^31 in a payload of 10 bytes
    const payload = Buffer.from([21, 0x80, 0, 0, 0, 1, 2, 3, 4, 5]);
    const t0 = performance.now();
    assert.throws(
      () => decodeMessage(payload),
      (e: unknown) =>
        e instanceof FrameDecodeError && /count 2147483648 cannot fit in the 5 bytes left/.test(e.message),
    );
    assert.ok(performance.now() - t0 < 50);
  });

  test('unknown kinds, empty payloads, bad booleans, bad enums, invalid UTF-8 and over-cap strings are typed decode errors', () => {
    const cases: [Buffer, RegExp][] = [
      [Buffer.from([250]), /unknown message kind 250/],
      [Buffer.alloc(0), /empty frame/],
      [Buffer.from([MessageKind.StartJob, 0, 0, 0, 1]), /truncated frame: StartJob\.jobId needs 1 bytes/],
      [
        Buffer.concat([
          encodeMessage(makeMessage('RegisterAck', { ok: true, message: '' })).subarray(0, 1),
          Buffer.from([2]),
        ]),
        /RegisterAck\.ok must be 0 or 1, got 2/,
      ],
      [Buffer.from([MessageKind.HelloClient, 0, 0, 0, 2, 0xc3, 0x28]), /HelloClient\.clientName is not valid UTF-8/],
      [
        Buffer.concat([Buffer.from([MessageKind.Register]), encodeLenString('w'.repeat(256))]),
        /Register\.workerId is 256 bytes, above the 255-byte cap/,
      ],
    ];
    for (const [payload, message] of cases) {
      assert.throws(
        () => decodeMessage(payload),
        (e: unknown) => e instanceof FrameDecodeError && message.test(e.message),
        message.source,
      );
    }
  });

  test('an enum value past the known ones is refused', () => {
    const m = sampleMessage('SubmitJob');
    const bytes = encodeMessage(m);
    // the alignment enum is the last byte of the CheckpointConfig before stateBackendUri: find and corrupt it
    const i = bytes.indexOf(Buffer.from('CheckpointConfig.stateBackendUri')) - 5;
    bytes[i] = 9;
    assert.throws(() => decodeMessage(bytes), /SubmitJob\.checkpoint\.alignment is 9, not one of the 3 known values/);
  });
});

function encodeLenString(s: string): Buffer {
  const b = Buffer.alloc(4 + Buffer.byteLength(s));
  b.writeUInt32BE(Buffer.byteLength(s));
  b.write(s, 4);
  return b;
}
