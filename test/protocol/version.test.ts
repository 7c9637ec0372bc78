import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  checkProtocolCompatibility,
  CLUSTER_PROTOCOL_VERSION,
  decodeMessage,
  LOCAL_PROTOCOL,
  MessageBuilder,
  MessageKind,
  MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION,
} from '../../src/protocol/index.js';

describe('protocol version negotiation', () => {
  test('peers talk only when each falls inside the other’s range (symmetric)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 9 }),
        (lv, lmin, rv, rmin) => {
          const local = { version: lv, minCompatible: Math.min(lmin, lv) };
          const remote = { version: rv, minCompatible: Math.min(rmin, rv) };
          const ok = remote.version >= local.minCompatible && local.version >= remote.minCompatible;
          assert.equal(checkProtocolCompatibility(local, remote).ok, ok);
          assert.equal(checkProtocolCompatibility(remote, local).ok, ok, 'the check is symmetric');
        },
      ),
    );
  });

  test('a refusal names both versions and which end to upgrade', () => {
    const names = { local: 'the coordinator', remote: 'worker w-1' };
    const old = checkProtocolCompatibility({ version: 3, minCompatible: 2 }, { version: 1, minCompatible: 1 }, names);
    assert.deepEqual(old, {
      ok: false,
      upgrade: 'remote',
      message:
        'protocol mismatch: the coordinator speaks protocol 3 (talks to 2..3), worker w-1 speaks 1 (talks to 1..1); upgrade worker w-1 to protocol 2 or later',
    });
    const newer = checkProtocolCompatibility({ version: 1, minCompatible: 1 }, { version: 4, minCompatible: 3 }, names);
    assert.equal(newer.ok, false);
    assert.equal((newer as { upgrade: string }).upgrade, 'local');
    assert.match((newer as { message: string }).message, /upgrade the coordinator to protocol 3 or later/);
  });

  test('a peer from before versioning sends no version fields, which read as version 1', () => {
    const b = new MessageBuilder();
    b.u8(MessageKind.Register).string('w-old').string('10.0.0.9');
    const m = decodeMessage(b.view());
    assert.equal(m.type, 'Register');
    assert.equal((m as { protocolVersion: number }).protocolVersion, 1);
    assert.equal((m as { minCompatibleProtocolVersion: number }).minCompatibleProtocolVersion, 1);
    assert.equal(
      checkProtocolCompatibility(LOCAL_PROTOCOL, { version: 1, minCompatible: 1 }).ok,
      MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION <= 1,
    );
    // 0 (a zeroed field) also reads as 1
    assert.deepEqual(checkProtocolCompatibility({ version: 0, minCompatible: 0 }, { version: 1, minCompatible: 1 }), {
      ok: true,
    });
  });

  test('this build is compatible with itself', () => {
    assert.ok(CLUSTER_PROTOCOL_VERSION >= MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION);
    assert.deepEqual(checkProtocolCompatibility(LOCAL_PROTOCOL, LOCAL_PROTOCOL), { ok: true });
  });
});
