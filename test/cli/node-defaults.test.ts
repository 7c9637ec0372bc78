/**
 * Every default of `clink node` is made once (config/node-defaults.ts): each setting with a default has
 * its flag, each flag's default is that setting's, and a command line with no flags means the configs a
 * node started from code gets.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { nodeFlagsOf, nodeOptions } from '../../src/cli/node-flag-table.js';
import { COORDINATOR_DEFAULTS, HA_DEFAULTS, RECONNECT_DEFAULTS, WORKER_DEFAULTS } from '../../src/config/index.js';
import { DEFAULT_COORDINATOR_CONFIG } from '../../src/coordinator/index.js';
import { DEFAULT_RECONNECT_POLICY, DEFAULT_WORKER_CONFIG } from '../../src/worker/index.js';

function parse(role: 'coordinator' | 'worker', ...args: string[]): ReturnType<typeof nodeFlagsOf> {
  const cmd = new Command().exitOverride();
  for (const { option } of nodeOptions()) cmd.addOption(option);
  cmd.parse(args, { from: 'user' });
  return nodeFlagsOf({ ...cmd.opts(), role });
}

test('every coordinator and worker setting with a default has a flag that defaults to it', () => {
  const flags = new Map(nodeOptions().map(({ option }) => [option.attributeName(), option]));
  // Set by another name: a worker's connect deadline is --handshake-timeout-ms.
  const byOtherName = new Set(['connectTimeoutMs']);
  for (const [key, value] of Object.entries({ ...COORDINATOR_DEFAULTS, ...WORKER_DEFAULTS })) {
    if (byOtherName.has(key)) continue;
    const flag = flags.get(key);
    assert.ok(flag, `no flag sets ${key}`);
    if (key === 'slotSharing') assert.equal(flag.defaultValue, value ? 'on' : 'off');
    else if (key === 'advertiseHost')
      assert.equal(flag.defaultValue, undefined, 'an empty advertise host means the bind host');
    else if (key === 'localStateDir')
      assert.equal(flag.defaultValue, undefined, "an empty local state dir means clink-state in the system's temp dir");
    else assert.equal(flag.defaultValue, value, `${flag.long} defaults to ${String(value)}`);
  }
});

test('a node command line without flags means the default configs', () => {
  const c = parse('coordinator');
  assert.deepEqual({ ...c.coordinator, epoch: 0 }, DEFAULT_COORDINATOR_CONFIG);
  const w = parse('worker');
  assert.deepEqual({ ...w.worker, connectTimeoutMs: c.coordinator.handshakeTimeoutMs }, DEFAULT_WORKER_CONFIG);
  assert.deepEqual(w.reconnect, DEFAULT_RECONNECT_POLICY);
  assert.deepEqual(w.reconnect, RECONNECT_DEFAULTS);
  assert.equal(w.ha?.etcdCluster, HA_DEFAULTS.etcdCluster);
  assert.equal(w.ha?.etcdLeaseTtlS, HA_DEFAULTS.etcdLeaseTtlS);
});

test('a flag given sets its setting in the role that reads it', () => {
  const w = parse(
    'worker',
    '--heartbeat-interval-ms',
    '250',
    '--reconnect-max-backoff-ms',
    '900',
    '--task-isolation',
    'none',
    '--id',
    'w9',
  );
  assert.equal(w.worker.heartbeatIntervalMs, 250);
  assert.equal(w.worker.taskIsolation, 'none');
  assert.equal(w.worker.id, 'w9');
  assert.equal(w.reconnect?.maxBackoffMs, 900);
  const c = parse('coordinator', '--max-restarts', '3', '--slot-sharing', 'off', '--max-pending-connections', '0');
  assert.equal(c.coordinator.maxRegionRetries, 3);
  assert.equal(c.coordinator.slotSharing, false);
  assert.equal(c.coordinator.maxPendingConnections, 1);
});
