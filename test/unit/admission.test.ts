// The admission policy at the pending-connection cap, decided in-process.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addressKey, AdmissionLogLimiter, admissionVerdict, type PendingAdmission } from '../../src/coordinator/index.js';

let seq = 0;
const pending = (address: string, stage: 0 | 1, acceptedAt = ++seq): PendingAdmission => ({ id: ++seq, address, stage, acceptedAt });

describe('admission at the cap', () => {
  test('below the cap everyone is admitted', () => {
    assert.deepEqual(admissionVerdict([pending('a', 0)], 'a', 2), { kind: 'admit' });
  });

  test('a flood of silent connections from one host: a newcomer evicts the oldest of them', () => {
    const flood = [pending('10.0.0.9', 0, 5), pending('10.0.0.9', 0, 3), pending('10.0.0.9', 1, 1)];
    const v = admissionVerdict(flood, '10.0.0.9', 3);
    assert.equal(v.kind, 'evict');
    assert.equal(v.kind === 'evict' && v.victim.acceptedAt, 3, 'the oldest that has sent nothing');
  });

  test('a newcomer from another host evicts from the busiest address, not its own', () => {
    const list = [pending('flood', 0), pending('flood', 0), pending('worker-host', 1)];
    const v = admissionVerdict(list, 'worker-host', 3);
    assert.equal(v.kind === 'evict' && v.victim.address, 'flood');
  });

  test('a newcomer from an address holding nothing is admitted past the cap, up to twice it', () => {
    const busy = [pending('a', 1), pending('a', 1)];
    assert.deepEqual(admissionVerdict(busy, 'b', 2), { kind: 'admit' });
    const full = [pending('a', 1), pending('a', 1), pending('b', 1), pending('c', 1)];
    assert.equal(admissionVerdict(full, 'd', 2).kind, 'refuse');
  });

  test('when every admission of the busiest address has its first frame under way, the newcomer is refused', () => {
    const v = admissionVerdict([pending('a', 1), pending('a', 1)], 'a', 2);
    assert.equal(v.kind, 'refuse');
    assert.match(v.kind === 'refuse' ? v.reason : '', /2 connections are being admitted, each with its first frame under way/);
  });

  test('a cap of 0 counts as 1', () => {
    assert.deepEqual(admissionVerdict([], 'a', 0), { kind: 'admit' });
    assert.equal(admissionVerdict([pending('a', 0)], 'a', 0).kind, 'evict');
  });

  test('addresses: IPv4-mapped IPv6 is the IPv4 address; IPv6 counts by its /64', () => {
    assert.equal(addressKey('::ffff:127.0.0.1'), '127.0.0.1');
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
  });

  test('refusal and eviction lines: five per window, then one summary of how many were left out', () => {
    const lines: string[] = [];
    let now = 0;
    const limiter = new AdmissionLogLimiter({ warn: (m) => lines.push(m) }, 5, 10_000, () => now);
    for (let i = 0; i < 12; i++) limiter.warn(`refused ${i}`);
    now = 10_000;
    limiter.warn('refused 12');
    assert.deepEqual(lines, ['refused 0', 'refused 1', 'refused 2', 'refused 3', 'refused 4', '7 more admission refusals or evictions in the last 10 s were not logged', 'refused 12']);
  });
});
