// The connector gate and the capability registry: a job naming a connector this build does not have is
// refused at submit, by the client before a byte ships and by the coordinator for any other client, in
// words that name the operator, the connector and what this build has; a connector passed as an object
// travels in the module and passes. The registry is served over HTTP and printed by `clink connectors`.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ClusterClient } from '../../src/client/index.js';
import { BUILTIN_CAPABILITIES, guaranteeRefusal, jobGuarantee, unknownConnectors } from '../../src/connectors/index.js';
import { Coordinator } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { buildJob, defineConnector, defineJob } from '../../src/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { NO_CHECKPOINTS } from '../../src/client/index.js';
import { makeMessage } from '../../src/protocol/index.js';
import { runCli } from '../harness/cli.js';

const HAS =
  'it has blackhole, datagen, file, kafka, nats, nexmark, postgres, print, sequence (or pass a connector object)';
const kafkaJob = defineJob(
  { name: 'to-kinesis', version: '1' },
  (env) => void env.fromSequence(1, 3).sinkTo('kinesis', { stream: 'out' }).name('to kinesis'),
);

describe('the connector gate', () => {
  test('only connectors named by string that this build lacks are flagged; objects travel in the module', () => {
    assert.deepEqual(unknownConnectors(buildJob(kafkaJob).spec.operators), [
      `operator 'to kinesis' names connector 'kinesis', which this build does not have; ${HAS}`,
    ]);
    const mine = defineConnector({ name: 'mine', sink: { createWriter: () => ({ write: () => undefined }) } } as never);
    const withObject = defineJob({ name: 'own', version: '1' }, (env) => void env.fromSequence(1, 3).sinkTo(mine));
    assert.deepEqual(unknownConnectors(buildJob(withObject).spec.operators), []);
  });

  test('refused by the client before anything ships, and by the coordinator for a client that does not check', async () => {
    const { log } = memoryLogger();
    const c = await Coordinator.start({ port: 0 }, { log, metrics: new ClinkMetrics() });
    try {
      const client = await ClusterClient.connect('127.0.0.1', c.port);
      const { spec } = buildJob(kafkaJob);
      await assert.rejects(
        client.submit({
          module: {
            sha256: '0'.repeat(64),
            code: new Uint8Array(0),
            sourceMap: new Uint8Array(0),
            sdk: { fingerprint: '', version: '' },
          } as never,
          spec,
          params: {},
        }),
        {
          code: 'CLINK_ERR_CONNECTOR',
          message: `operator 'to kinesis' names connector 'kinesis', which this build does not have; ${HAS}`,
        },
      );
      client.close();
      const raw = makeMessage('SubmitJob', {
        jobName: 'to-kinesis',
        specJson: JSON.stringify(spec),
        modules: [],
        checkpoint: NO_CHECKPOINTS,
      });
      await assert.rejects(c.submit(raw), {
        code: 'CLINK_ERR_CONNECTOR',
        message: /names connector 'kinesis', which this build does not have/,
      });
    } finally {
      await c.stop();
    }
  });

  test('the guarantee a job runs with: the weakest of its sources and sinks with checkpoints, at most at-least-once without', () => {
    const ops = (build: Parameters<typeof defineJob>[1]) =>
      buildJob(defineJob({ name: 'g', version: '1' }, build)).spec.operators;
    const exact = ops(
      (env) => void env.fromSource('datagen', { count: 5, fields: {} }).sinkTo('file', { path: '/tmp/x' }),
    );
    assert.deepEqual(jobGuarantee(exact, true, 0), { level: 'exactly-once', limitedBy: '' });
    assert.deepEqual(jobGuarantee(exact, false, 0), {
      level: 'at-most-once',
      limitedBy: 'no checkpoint directory (--checkpoint-dir)',
    });
    assert.deepEqual(jobGuarantee(exact, false, 2), {
      level: 'at-least-once',
      limitedBy: 'no checkpoint directory (--checkpoint-dir)',
    });
    const printed = ops((env) => void env.fromSequence(1, 3).print().name('console'));
    assert.deepEqual(jobGuarantee(printed, true, 0), {
      level: 'at-least-once',
      limitedBy: "sink 'console' (connector print)",
    });
    const mine = defineConnector({ name: 'mine', sink: { createWriter: () => ({ write: () => undefined }) } } as never);
    const own = ops((env) => void env.fromSequence(1, 3).sinkTo(mine).name('own sink'));
    assert.deepEqual(jobGuarantee(own, true, 0), {
      level: 'at-least-once',
      limitedBy: "sink 'own sink' (connector mine, which declares no guarantee)",
    });
  });

  test('a sink whose delivery is an option gives what the option chooses: Kafka and PostgreSQL at-least-once unless asked for exactly-once', () => {
    const ops = (build: Parameters<typeof defineJob>[1]) =>
      buildJob(defineJob({ name: 'g', version: '1' }, build)).spec.operators;
    const kafka = (delivery?: string) =>
      ops(
        (env) =>
          void env
            .fromSource('kafka', { bootstrapServers: 'k:9092', topic: 'in' })
            .sinkTo('kafka', {
              bootstrapServers: 'k:9092',
              topic: 'out',
              ...(delivery ? { delivery, transactionalIdPrefix: 'to-kafka' } : {}),
            })
            .name('to kafka'),
      );
    assert.deepEqual(jobGuarantee(kafka(), true, 0), {
      level: 'at-least-once',
      limitedBy: "sink 'to kafka' (connector kafka)",
    });
    assert.deepEqual(jobGuarantee(kafka('exactly-once'), true, 0), { level: 'exactly-once', limitedBy: '' });
    const pg = ops(
      (env) =>
        void env
          .fromSequence(1, 3)
          .sinkTo('postgres', { connectionString: 'postgres://h/db', table: 't' })
          .name('to pg'),
    );
    assert.equal(
      guaranteeRefusal('exactly-once', jobGuarantee(pg, true, 0)),
      "the job asks for exactly-once but can give at-least-once: limited by sink 'to pg' (connector postgres)",
    );
    const nats = ops(
      (env) =>
        void env
          .fromSource('nats', { servers: 'n:4222', stream: 'S' })
          .sinkTo('nats', { servers: 'n:4222', subject: 'S.out', messageIdPrefix: 'p' }),
    );
    assert.deepEqual(jobGuarantee(nats, true, 0), { level: 'exactly-once', limitedBy: '' });
  });

  test('the guarantee gate: a job asking for more than its connectors and checkpointing give is refused at submit, naming what limits it', async () => {
    assert.throws(
      () => defineJob({ name: 'g', version: '1', guarantee: 'twice' as never }, () => undefined),
      /guarantee must be 'at-most-once', 'at-least-once' or 'exactly-once', got 'twice'/,
    );
    const wants = defineJob(
      { name: 'printer', version: '1', guarantee: 'exactly-once' },
      (env) => void env.fromSequence(1, 3).print().name('console'),
    );
    const { spec } = buildJob(wants);
    assert.equal(spec.job.guarantee, 'exactly-once');
    const { log } = memoryLogger();
    const c = await Coordinator.start({ port: 0 }, { log, metrics: new ClinkMetrics() });
    try {
      const raw = makeMessage('SubmitJob', {
        jobName: 'printer',
        specJson: JSON.stringify(spec),
        modules: [],
        checkpoint: { ...NO_CHECKPOINTS, checkpointDir: '/tmp/ck' },
      });
      await assert.rejects(c.submit(raw), {
        code: 'CLINK_ERR_CONNECTOR',
        message:
          "the job asks for exactly-once but can give at-least-once: limited by sink 'console' (connector print)",
      });
    } finally {
      await c.stop();
    }
    const refused = await runCli(
      ['run', 'examples/wordcount.ts', '--guarantee', 'exactly-once', '--workers', '0', '--no-typecheck'],
      process.cwd(),
    );
    assert.equal(refused.code, 1);
    // Refused by the lint's job checks before the job reaches the local coordinator (which refuses it too).
    assert.match(
      refused.stderr,
      /^error: the job asks for exactly-once but can give at-most-once: limited by no checkpoint directory \(--checkpoint-dir\)$/m,
    );
    // With checkpoints it gets it: the guarantee asked for on the command line is the submit's, not a different plan.
    const ckpt = await mkdtemp(join(tmpdir(), 'clink-guarantee-'));
    try {
      const ok = await runCli(
        [
          'run',
          'examples/wordcount.ts',
          '--guarantee',
          'exactly-once',
          '--checkpoint-dir',
          ckpt,
          '--workers',
          '0',
          '--no-typecheck',
          '--output',
          'json',
        ],
        process.cwd(),
      );
      assert.equal(ok.code, 0, ok.stderr);
    } finally {
      await rm(ckpt, { recursive: true, force: true });
    }
  });

  test('the registry over HTTP and from clink connectors', async () => {
    const app = buildHttpApp({ role: 'coordinator', metrics: new ClinkMetrics(), config: {} });
    const res = await app.inject({ method: 'GET', url: '/api/v1/connectors' });
    assert.deepEqual(res.json(), { connectors: BUILTIN_CAPABILITIES });
    assert.deepEqual(res.json().connectors.find((x: { name: string }) => x.name === 'file').sink, {
      delivery: 'exactly-once',
      transactional: true,
    });
    await app.close();
    const cli = await runCli(['connectors', '--json'], process.cwd());
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(JSON.parse(cli.stdout), BUILTIN_CAPABILITIES);
  });
});
