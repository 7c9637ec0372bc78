// A peer that sends the first 200 MiB of a 256 MiB frame, twice at once (each within the per-frame cap):
// the node's budget for frames in flight (--max-inflight-frame-bytes, one largest frame by default) cuts
// the one that would pass it, and once both are gone the coordinator's memory comes back. Before, two
// such peers took it from 122 to 527 MB, still 487 MB 30 s after they closed. Garbage on many
// connections costs a line per address and interval, counted by reason.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { encodeFrame, makeMessage } from '../../src/protocol/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { waitFor } from '../helpers.js';

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Connect as a client, then begin a frame of `claimed` bytes and send `sent` of them; resolves when the peer closed it (true) or all was sent (false). */
function partialFrame(port: number, claimed: number, sent: number): { socket: Socket; done: Promise<boolean> } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const done = new Promise<boolean>((resolve) => {
    let closed = false;
    socket.once('close', () => {
      closed = true;
      resolve(true);
    });
    socket.once('connect', async () => {
      socket.write(encodeFrame(makeMessage('HelloClient', { clientName: 'flood' })));
      const head = Buffer.alloc(4);
      head.writeUInt32BE(claimed);
      socket.write(head);
      const chunk = Buffer.alloc(1024 * 1024, 7);
      for (let at = 0; at < sent && !closed; at += chunk.length) {
        if (!socket.write(chunk)) {
          await new Promise<void>((r) => {
            const go = (): void => {
              socket.off('drain', go).off('close', go);
              r();
            };
            socket.on('drain', go).on('close', go);
          });
        }
      }
      if (!closed) resolve(false);
    });
  });
  return { socket, done };
}

/**
 * The coordinator's resident memory once it has settled: read twice a second apart until two readings
 * are within 1 MiB. The baseline is taken once /metrics has been served (as the test does after the
 * flood), so lazy start-up work is not counted as memory the flood kept.
 */
async function settledRss(pid: number): Promise<number> {
  let last = await rssOf(pid);
  let now = last;
  await waitFor("the coordinator's RSS to settle", async () => {
    await new Promise((r) => setTimeout(r, 1_000));
    [last, now] = [now, await rssOf(pid)];
    return Math.abs(now - last) < 1024 * 1024;
  });
  return now;
}

describe('peers that would exhaust a node', () => {
  test(
    'two peers each holding 200 MiB of a 256 MiB frame: one is cut by the budget, and the memory comes back once they close',
    { timeout: 180_000 },
    async () => {
      const h = await ClusterHarness.start({ workers: 0 });
      try {
        const pid = h.coordinator.child.pid!;
        await h.workerMetric(h.coordinator, 'clink_connections_rejected_total', {
          role: 'coordinator',
          reason: 'memory',
        });
        const before = await settledRss(pid);
        const a = partialFrame(h.controlPort, 256 * 1024 * 1024, 200 * 1024 * 1024);
        const b = partialFrame(h.controlPort, 256 * 1024 * 1024, 200 * 1024 * 1024);
        const outcomes = await Promise.all([a.done, b.done]);
        assert.ok(outcomes.includes(true), 'one of them was cut');
        assert.equal(
          await h.workerMetric(h.coordinator, 'clink_connections_rejected_total', {
            role: 'coordinator',
            reason: 'memory',
          }),
          1,
        );
        const peak = await rssOf(pid);
        a.socket.destroy();
        b.socket.destroy();
        await waitFor(
          `the coordinator's RSS back within 10% of ${before} bytes (peak ${peak})`,
          async () => (await rssOf(pid)) <= before * 1.1,
        );
        assert.ok(
          h.coordinator.logs.some((l) =>
            /closed \(memory\): .*over 268435456 \(--max-inflight-frame-bytes\); cutting it$/.test(String(l.msg)),
          ),
          'the cut is logged, naming the flag',
        );
      } finally {
        await h.close();
      }
    },
  );

  test(
    'garbage on 300 connections to the control port and to a data port: a line or two per address in each log, every connection counted by reason',
    { timeout: 120_000 },
    async () => {
      const h = await ClusterHarness.start({ workers: 1, slots: 1 });
      try {
        const worker = h.worker('w1');
        // The warm job thread's data port joins the ready file (and /api/v1/worker) once it listens.
        let ports = { dataPort: 0, jobDataPorts: [] as number[] };
        await waitFor(
          "the job thread's data port in the ready file",
          async () =>
            (ports = JSON.parse(await readFile(worker.readyFile!, 'utf8')) as typeof ports).jobDataPorts.length > 0,
        );
        const self = (await (await fetch(`http://127.0.0.1:${worker.httpPort}/api/v1/worker`)).json()) as {
          jobDataPorts: number[];
        };
        assert.deepEqual(self.jobDataPorts, ports.jobDataPorts);
        const garbage = (port: number): Promise<void> =>
          new Promise((resolve) => {
            const s = connect(port, '127.0.0.1');
            s.on('error', () => undefined);
            s.once('connect', () => s.write(Buffer.from([0, 0, 0, 5, 250, 1, 2, 3, 4])));
            s.once('close', () => resolve());
          });
        const before = { coordinator: h.coordinator.logs.length, worker: worker.logs.length };
        for (let i = 0; i < 100; i++)
          await Promise.all([garbage(h.controlPort), garbage(ports.dataPort), garbage(ports.jobDataPorts[0]!)]);
        await waitFor(
          'every garbage connection counted',
          async () =>
            (await h.workerMetric(h.coordinator, 'clink_connections_rejected_total', { role: 'coordinator' })) >= 100,
        );
        await waitFor(
          'every data connection counted',
          async () =>
            (await h.workerMetric(worker, 'clink_connections_rejected_total', {
              role: 'worker.data',
              reason: 'malformed',
            })) >= 200,
        );
        const lines = (logs: Record<string, unknown>[], from: number): string[] =>
          logs
            .slice(from)
            .map((l) => String(l.msg))
            .filter((m) => m.includes('127.0.0.1'));
        assert.ok(
          lines(h.coordinator.logs, before.coordinator).length <= 2,
          JSON.stringify(lines(h.coordinator.logs, before.coordinator)),
        );
        assert.ok(lines(worker.logs, before.worker).length <= 4, JSON.stringify(lines(worker.logs, before.worker)));
        assert.ok(
          !h.coordinator.logs.slice(before.coordinator).some((l) => l.err !== undefined),
          'no stack for what a peer sent',
        );
      } finally {
        await h.close();
      }
    },
  );
});
