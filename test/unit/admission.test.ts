// The admission policy at the pending-connection cap, decided in-process.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  addressKey,
  AdmissionLogLimiter,
  admissionVerdict,
  type PendingAdmission,
} from '../../src/coordinator/index.js';

let seq = 0;
const pending = (address: string, stage: 0 | 1, acceptedAt = ++seq): PendingAdmission => ({
  id: ++seq,
  address,
  stage,
  acceptedAt,
});

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

  test('a newcomer under its fair share is admitted past the cap, up to three times it, where it evicts from the busiest address', () => {
    const list = [pending('flood', 0), pending('flood', 0), pending('worker-host', 1)];
    assert.deepEqual(
      admissionVerdict(list, 'worker-host', 3),
      { kind: 'admit' },
      'worker-host holds 1, its share of 3 among 2 addresses is 2',
    );
    const full = [...Array.from({ length: 7 }, () => pending('flood', 0)), pending('b', 1), pending('c', 1)];
    const v = admissionVerdict(full, 'worker-host', 3);
    assert.equal(
      v.kind === 'evict' && v.victim.address,
      'flood',
      'at three times the cap: the busiest address gives way',
    );
  });

  test('an address at its fair share makes room from its own admissions, never from others', () => {
    // Three addresses and a cap of 3: a share of 1 each; 'a' holds 2 already.
    const list = [pending('a', 0, 1), pending('a', 1, 2), pending('b', 0, 3)];
    const v = admissionVerdict(list, 'a', 3);
    assert.equal(v.kind === 'evict' && v.victim.acceptedAt, 1, "a's own oldest silent admission");
  });

  test('refused: an address at its share whose admissions all have a first frame under way; everyone at the hard ceiling when nothing is silent', () => {
    const v = admissionVerdict([pending('a', 1), pending('a', 1)], 'a', 2);
    assert.equal(v.kind, 'refuse');
    assert.match(
      v.kind === 'refuse' ? v.reason : '',
      /^a holds 2 of the 2 connections being admitted \(its share of --max-pending-connections 2\), each with its first frame under way$/,
    );
    const ceiling = Array.from({ length: 6 }, (_, i) => pending(`h${i}`, 1));
    const r = admissionVerdict(ceiling, 'new', 2);
    assert.match(
      r.kind === 'refuse' ? r.reason : '',
      /^6 connections are being admitted \(three times --max-pending-connections 2\)/,
    );
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
    assert.deepEqual(lines, [
      'refused 0',
      'refused 1',
      'refused 2',
      'refused 3',
      'refused 4',
      '7 more admission refusals or evictions in the last 10 s were not logged',
      'refused 12',
    ]);
  });
});
