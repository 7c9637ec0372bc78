// A single-node Kafka broker (KRaft: broker and controller in one JVM) for tests and benchmarks, from
// the Apache Kafka jars on Maven Central (scripts/kafka/pom.xml), cached in ~/.cache/clink. Java 17+
// and Maven must be on the PATH. startKafka() formats a fresh log dir, starts the JVM and waits until
// the broker serves a metadata request (on fresh ports again if it exits first); restart() stops it (SIGTERM, or SIGKILL with hard) and starts it on the same port
// and data, as a broker restart in production would.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.mjs';

const POM = join(dirname(fileURLToPath(import.meta.url)), 'kafka', 'pom.xml');

/** The broker's jars, fetched once. */
export function kafkaJars() {
  const dir = process.env.CLINK_KAFKA_JARS ?? join(homedir(), '.cache', 'clink', 'kafka-4.1.1');
  if (existsSync(dir) && readdirSync(dir).some((f) => f.startsWith('kafka_2.13'))) return dir;
  for (const bin of ['java', 'mvn']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0)
      throw new Error(`${bin} is not installed: the Kafka broker for the tests needs Java 17+ and Maven`);
  }
  mkdirSync(dir, { recursive: true });
  console.log(`fetching the Kafka broker jars (Maven) into ${dir}`);
  const r = spawnSync('mvn', ['-q', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${dir}`], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`mvn dependency:copy-dependencies failed (${r.status})`);
  return dir;
}

function answers(port) {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/**
 * Whether the broker on `port` serves Kafka requests: a port that takes connections is not enough (a
 * broker whose controller port was taken binds its listener, then exits; a test's first admin call
 * then failed on every retry).
 */
async function serves(port) {
  if (!(await answers(port))) return false;
  const { Admin } = await import('@platformatic/kafka');
  const admin = new Admin({ clientId: 'clink-ready', bootstrapBrokers: [`127.0.0.1:${port}`], retries: 0 });
  try {
    await admin.metadata({ topics: [] });
    return true;
  } catch {
    return false;
  } finally {
    await admin.close().catch(() => undefined);
  }
}

/** Broker starts tried, each on fresh ports: two free ports can be taken by another process before the JVM binds them. */
const START_ATTEMPTS = 3;

export async function startKafka(dir) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startKafkaOnce(join(dir, `attempt-${attempt}`));
    } catch (err) {
      if (!(err instanceof BrokerExited) || attempt >= START_ATTEMPTS) throw err;
      console.log(`${err.message}; starting it again on other ports`);
    }
  }
}

class BrokerExited extends Error {}

async function startKafkaOnce(dir) {
  const jars = kafkaJars();
  const [port, controller] = [await freePort(), await freePort()];
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'server.properties');
  writeFileSync(
    config,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controller}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controller}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${join(dir, 'data')}`,
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=4',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=4',
      'group.initial.rebalance.delay.ms=0',
      'num.partitions=1',
      'auto.create.topics.enable=false',
      '',
    ].join('\n'),
  );
  const cp = `${jars}/*`;
  const format = spawnSync(
    'java',
    ['-cp', cp, 'kafka.tools.StorageTool', 'format', '-t', 'clink-test-cluster-0001', '-c', config],
    { encoding: 'utf8' },
  );
  if (format.status !== 0) throw new Error(`formatting the Kafka log dir failed: ${format.stderr || format.stdout}`);
  let proc;
  const launch = async () => {
    proc = spawn('java', ['-Xmx768m', '-XX:+UseSerialGC', '-cp', cp, 'kafka.Kafka', config], {
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    const deadline = Date.now() + 90_000;
    while (!(await serves(port))) {
      if (proc.exitCode !== null)
        throw new BrokerExited(`the Kafka broker exited with ${proc.exitCode} before it served`);
      if (Date.now() > deadline) throw new Error('the Kafka broker did not serve requests within 90 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stop = async (signal = 'SIGTERM') => {
    if (proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill(signal);
    await exited;
  };
  await launch();
  console.log(`kafka on 127.0.0.1:${port}`);
  return {
    bootstrap: `127.0.0.1:${port}`,
    env: { CLINK_TEST_KAFKA: `127.0.0.1:${port}` },
    restart: async (hard = false) => {
      await stop(hard ? 'SIGKILL' : 'SIGTERM');
      await launch();
    },
    stop: () => stop(),
  };
}
