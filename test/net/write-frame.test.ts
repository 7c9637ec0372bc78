import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrameReader, FrameTimeoutError, writeFrame } from '../../src/net/index.js';
import { decodeMessage, makeMessage } from '../../src/protocol/index.js';
import { socketPair } from './pair.js';

test('writeFrame resolves once the frame is written, and the peer reads it whole', async () => {
  const p = await socketPair();
  await writeFrame(p.server, makeMessage('RegisterAck', { ok: true, message: 'welcome', epoch: 2 }));
  const m = decodeMessage((await new FrameReader(p.client).next())!);
  assert.equal(m.type, 'RegisterAck');
  assert.equal((m as { epoch: number }).epoch, 2);
  await p.close();
});

test('a peer that does not read cannot hold writeFrame past its deadline', async () => {
  const p = await socketPair();
  p.client.pause();
  const big = makeMessage('SubmitJobAck', { ok: false, jobId: '', message: 'x'.repeat(32 * 1024 * 1024) });
  const t0 = Date.now();
  await assert.rejects(
    writeFrame(p.server, big, 200),
    (e: unknown) => e instanceof FrameTimeoutError && /within 200 ms/.test(e.message),
  );
  assert.ok(Date.now() - t0 < 1_500);
  assert.equal(p.server.destroyed, true);
  await p.close();
});
