// Mesh runs with real processes (design record 017): three members started with three commands give the
// same results as the same job on a local coordinator cluster and in one process; a member whose job
// differs is refused with what differs, and the run goes on with the right one.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../harness/cli.js';
import { controlPort, startMember } from '../harness/mesh.js';

const ROOT = resolve(import.meta.dirname, '../..');
const Q5 = join(ROOT, 'examples/nexmark/q5.ts');
const WINDOWS = join(ROOT, 'examples/window-aggregation.ts');

/** A job's collected output, each sink's rows in a canonical order. */
function rows(stdout: string): Record<string, string[]> {
  const parsed = JSON.parse(stdout) as Record<string, unknown[]>;
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, v.map((r) => JSON.stringify(r)).sort()]));
}

/** Run `job` on a mesh of `n` members (leader first); returns each member's exit. */
async function mesh(dir: string, job: string, n: number, args: string[]) {
  const common = [job, '--no-typecheck', '--output', 'json', ...args];
  const leader = startMember(
    [...common, '--lead', String(n), '--control', '127.0.0.1:0', '--exchange', '127.0.0.1:0'],
    dir,
  );
  const port = await controlPort(leader);
  const joiners = Array.from({ length: n - 1 }, () =>
    startMember([...common, '--join', `127.0.0.1:${port}`, '--exchange', '127.0.0.1:0'], dir),
  );
  return Promise.all([leader, ...joiners].map((m) => m.exited));
}

describe('mesh runs', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clink-mesh-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const [name, job, params] of [
    ['Nexmark q5', Q5, ['--param', 'events=60000']],
    ['a keyed window job', WINDOWS, []],
  ] as const) {
    test(`${name}: a 3-member mesh gives what a coordinator cluster and one process give`, async () => {
      const args = ['-p', '3', ...params];
      const [leader, ...joiners] = await mesh(dir, job, 3, args);
      assert.equal(leader!.code, 0, leader!.stderr);
      for (const j of joiners) {
        assert.equal(j.code, 0, j.stderr);
        assert.equal(j.stdout, '', 'only the leader prints the results');
        assert.match(j.stderr, /finished in [\d.]+ s \(parallelism 3, mesh of 3 members\)/);
      }
      // Every member ran part of the job: each holds one slot of three.
      assert.match(leader!.stderr, /"members":\["127\.0\.0\.1:\d+","127\.0\.0\.1:\d+","127\.0\.0\.1:\d+"\]/);
      const cluster = await runCli(
        ['run', job, '--no-typecheck', '--no-progress', '--output', 'json', '--workers', '2', ...args],
        dir,
        120_000,
      );
      const local = await runCli(
        ['run', job, '--no-typecheck', '--no-progress', '--output', 'json', '--workers', '0', ...args],
        dir,
        120_000,
      );
      assert.equal(cluster.code, 0, cluster.stderr);
      assert.equal(local.code, 0, local.stderr);
      const meshed = rows(leader!.stdout);
      assert.ok(Object.values(meshed)[0]!.length > 0, 'the job produced rows');
      assert.deepEqual(meshed, rows(cluster.stdout));
      assert.deepEqual(meshed, rows(local.stdout));
    });
  }

  test('a member whose job differs is refused with what differs; the run completes with the right one', async () => {
    const common = [WINDOWS, '--no-typecheck', '--output', 'json'];
    const leader = startMember(
      [...common, '-p', '2', '--lead', '2', '--control', '127.0.0.1:0', '--exchange', '127.0.0.1:0'],
      dir,
    );
    const port = await controlPort(leader);
    const wrong = await startMember(
      [...common, '-p', '4', '--join', `127.0.0.1:${port}`, '--exchange', '127.0.0.1:0'],
      dir,
    ).exited;
    assert.equal(wrong.code, 1, wrong.stderr);
    assert.match(
      wrong.stderr,
      new RegExp(
        `^error: the mesh leader at 127\\.0\\.0\\.1:${port} refused this member: its job differs from the leader's: task '[^']+' runs at parallelism 2 at the leader and 4 here; give every member the same -p and params$`,
        'm',
      ),
    );
    const right = await startMember(
      [...common, '-p', '2', '--join', `127.0.0.1:${port}`, '--exchange', '127.0.0.1:0'],
      dir,
    ).exited;
    const led = await leader.exited;
    assert.equal(right.code, 0, right.stderr);
    assert.equal(led.code, 0, led.stderr);
    assert.ok(Object.values(rows(led.stdout))[0]!.length > 0);
  });

  test('mesh flags without a role, or a role without its flags, are refused naming the flag', async () => {
    const noRole = await runCli(['run', WINDOWS, '--no-typecheck', '--exchange', '127.0.0.1:0'], dir);
    assert.equal(noRole.code, 1);
    assert.match(
      noRole.stderr,
      /^error: --exchange is for a mesh run: add --lead <members> or --join <leader host:port>$/m,
    );
    const noControl = await runCli(['run', WINDOWS, '--no-typecheck', '--lead', '2', '--exchange', '127.0.0.1:0'], dir);
    assert.equal(noControl.code, 1);
    assert.match(noControl.stderr, /^error: --lead needs --control <host:port> \(where the members register\)$/m);
  });
});
