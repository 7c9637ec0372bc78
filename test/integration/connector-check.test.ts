// Before a job deploys, each built-in connector checks its external system from the coordinator: an
// address where nothing listens is refused at submit in one line naming the address and the option
// (before: accepted, then retried as a transient fault for minutes of restarts). `clink run` says the
// same and exits 1. A secret only the workers can read leaves its connector unchecked.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { checkConnectors } from '../../src/connectors/index.js';
import { buildJob, defineJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { runCli } from '../harness/cli.js';

const JOB = resolve(import.meta.dirname, '../fixtures/jobs/external-systems.ts');

describe('connector checks at submit', () => {
  test(
    'an address where nothing listens: Kafka, PostgreSQL and NATS are refused in one line naming the address and the option, the password never',
    { timeout: 120_000 },
    async () => {
      const h = await ClusterHarness.start({ workers: 1, slots: 2 });
      try {
        const connectorError = (e: Error): boolean => (e as { code?: string }).code === 'CLINK_ERR_CONNECTOR';
        await assert.rejects(
          h.submit(JOB, { params: { system: 'kafka' } }),
          (e: Error) =>
            connectorError(e) &&
            /^ClinkError: submit refused: source '_inline_source_0': kafka source: cannot reach the brokers at 127\.0\.0\.1:1 \(.*\); check the option bootstrapServers and that they run$/.test(
              String(e),
            ),
        );
        await assert.rejects(
          h.submit(JOB, { params: { system: 'postgres' } }),
          (e: Error) =>
            connectorError(e) &&
            /^ClinkError: submit refused: sink '_inline_postgres_0': postgres sink: cannot connect to PostgreSQL at 127\.0\.0\.1:1\/shop: .*ECONNREFUSED.*; check the option connectionString and that the server runs$/.test(
              String(e),
            ) &&
            !String(e).includes('hunter2'),
        );
        await assert.rejects(
          h.submit(JOB, { params: { system: 'nats' } }),
          (e: Error) =>
            connectorError(e) &&
            /^ClinkError: submit refused: source '_inline_source_0': nats source: cannot connect to NATS at 127\.0\.0\.1:1: .*; check the option servers \(and token\) and that the server runs$/.test(
              String(e),
            ),
        );
        assert.deepEqual((await h.http<{ jobs: unknown[] }>('/api/v1/jobs')).body.jobs, [], 'nothing was deployed');
      } finally {
        await h.close();
      }
    },
  );

  test('clink run: one line, exit 1', { timeout: 120_000 }, async () => {
    const r = await runCli(
      ['run', JOB, '--workers', '1', '--no-progress', '--no-typecheck', '--param', 'system=kafka'],
      resolve(import.meta.dirname, '../..'),
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /^error: submit refused: source '_inline_source_0': kafka source: cannot reach the brokers at 127\.0\.0\.1:1 \(.*\); check the option bootstrapServers and that they run$/m,
    );
  });

  test('a secret this process cannot read, or checks turned off (0), leave the connector unchecked', async () => {
    const ops = (url: string) =>
      buildJob(
        defineJob(
          { name: 'j', version: '1' },
          (env) => void env.fromSequence(1, 2).sinkTo('postgres', { connectionString: url, table: 't' }),
        ),
      ).spec.operators;
    assert.deepEqual(await checkConnectors(ops('env://CLINK_TEST_UNSET_URL'), 2_000, {}), []);
    assert.deepEqual(await checkConnectors(ops('postgres://127.0.0.1:1/db'), 0), []);
    assert.equal((await checkConnectors(ops('postgres://127.0.0.1:1/db'), 2_000)).length, 1);
  });
});
