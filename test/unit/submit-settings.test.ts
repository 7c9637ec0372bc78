// A submit's settings by name: the query parameters' own names and Flink's configuration keys parse to
// the same settings, and a SQL session's SET gives a job its checkpoint settings (or is refused, placed).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkpointSettingsOfSets, submitSettingsFromQuery } from '../../src/client/index.js';
import { SqlCatalog, SqlError, SqlSession, type SqlResult } from '../../src/sql/index.js';
import { flinkDuration } from '../../src/util/index.js';

describe('submit settings by name', () => {
  test("Flink's durations: a unit or none (milliseconds)", () => {
    assert.equal(flinkDuration('500'), 500);
    assert.equal(flinkDuration('500 ms'), 500);
    assert.equal(flinkDuration('10s'), 10_000);
    assert.equal(flinkDuration('2 min'), 120_000);
    assert.equal(flinkDuration('1 h'), 3_600_000);
    assert.throws(() => flinkDuration('soon'), /^Error: expected a duration such as 500 ms, 10 s or 1 min/);
    assert.throws(() => flinkDuration('-5 s'), /expected a duration/);
    assert.throws(() => flinkDuration('5 fortnights'), /expected a duration/);
  });

  test("a query takes the checkpoint settings by their own names or Flink's keys", () => {
    const own = submitSettingsFromQuery({
      checkpoint_timeout_ms: '30000',
      checkpoint_min_pause_ms: '500',
      tolerable_failed_checkpoints: '3',
    });
    const flink = submitSettingsFromQuery({
      'execution.checkpointing.timeout': '30 s',
      'execution.checkpointing.min-pause': '500 ms',
      'execution.checkpointing.tolerable-failed-checkpoints': '3',
    });
    assert.deepEqual(own.checkpoint, { timeoutMs: 30_000, minPauseMs: 500, tolerableFailures: 3 });
    assert.deepEqual(flink, own);
    assert.throws(
      () => submitSettingsFromQuery({ 'execution.checkpointing.timeout': 'later' }),
      /^InvalidArgumentError: query parameter execution.checkpointing.timeout: expected a duration/,
    );
    assert.throws(
      () => submitSettingsFromQuery({ 'execution.checkpointing.tolerable-failed-checkpoints': '-1' }),
      /expected a whole number >= 0/,
    );
  });

  test('SET takes only checkpoint settings', () => {
    assert.deepEqual(checkpointSettingsOfSets({ 'execution.checkpointing.interval': '2 s', alignment: 'aligned' }), {
      intervalMs: 2000,
      alignment: 'aligned',
    });
    assert.throws(
      () => checkpointSettingsOfSets({ parallelism: '4' }),
      /setting 'parallelism' is not a checkpoint setting/,
    );
    assert.throws(() => checkpointSettingsOfSets({ 'table.exec.mini-batch.enabled': 'true' }), /unknown setting/);
  });

  test("the state backend type by its own name or Flink's state.backend.type (hashmap is heap, rocksdb is disk)", () => {
    assert.deepEqual(checkpointSettingsOfSets({ 'state.backend.type': 'rocksdb' }), { stateBackendType: 'disk' });
    assert.deepEqual(checkpointSettingsOfSets({ 'state.backend.type': 'hashmap' }), { stateBackendType: 'heap' });
    assert.equal(submitSettingsFromQuery({ state_backend_type: 'disk' }).checkpoint.stateBackendType, 'disk');
    assert.throws(
      () => checkpointSettingsOfSets({ 'state.backend.type': 'memory' }),
      /setting state.backend.type: 'memory' is not a state backend type; give heap \(Flink's hashmap\) or disk \(rocksdb\)/,
    );
    assert.throws(
      () => submitSettingsFromQuery({ state_backend_type: 'rocksdb' }),
      /query parameter state_backend_type/,
    );
  });
});

describe("a SQL session's SET and RESET", () => {
  const check = (key: string, value: string): void => void checkpointSettingsOfSets({ [key]: value });
  const CREATE =
    "CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3'); CREATE TABLE out (id BIGINT) WITH ('connector' = 'blackhole');";
  const jobSettings = (results: SqlResult[]): Record<string, string>[] =>
    results.flatMap((r) => (r.kind === 'job' ? [r.settings] : []));

  test('a SET reaches every job compiled after it, in that call or (given the map) later ones; RESET undoes it', async () => {
    const session = new SqlSession(await SqlCatalog.open(['datagen', 'blackhole']));
    const settings = new Map<string, string>();
    const o = { settings, checkSetting: check };
    const first = await session.execute(
      `${CREATE} INSERT INTO out SELECT id FROM src; SET 'execution.checkpointing.timeout' = '30 s'; INSERT INTO out SELECT id FROM src;`,
      o,
    );
    assert.deepEqual(jobSettings(first), [{}, { 'execution.checkpointing.timeout': '30 s' }]);
    const listed = await session.execute('SET;', o);
    assert.deepEqual(listed[0], {
      kind: 'message',
      statement: 'SET',
      message: '1 setting',
      rows: [{ key: 'execution.checkpointing.timeout', value: '30 s' }],
    });
    const later = await session.execute(
      `RESET 'execution.checkpointing.timeout'; INSERT INTO out SELECT id FROM src;`,
      o,
    );
    assert.deepEqual(jobSettings(later), [{}]);
    const fresh = await session.execute(`SET 'checkpoint_min_pause_ms' = '5'; RESET; SET;`, o);
    const last = fresh.at(-1)!;
    assert.equal(last.kind === 'message' ? last.message : last.kind, '0 settings');
  });

  test('a SET the submit would refuse is refused where it is written', async () => {
    const session = new SqlSession(await SqlCatalog.open(['datagen', 'blackhole']));
    const text = "SHOW TABLES;\nSET 'execution.checkpointing.min-pause' = 'a while';";
    await assert.rejects(
      session.execute(text, { checkSetting: check }),
      (err: unknown) =>
        err instanceof SqlError &&
        /setting execution.checkpointing.min-pause: expected a duration/.test(err.message) &&
        err.position === 14 &&
        err.excerpt() === "SET 'execution.checkpointing.min-pause' = 'a while';\n^",
    );
  });
});
