// The first SQL request over HTTP loads the SQL planner (building its parser takes a second or more of
// CPU) and plans: in a thread of its own, never on the coordinator's event loop, which reads frames and
// answers heartbeats. Measured as the time the coordinator's loop was busy while the request ran. Its
// own file: the test needs a process that has not loaded the planner yet.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { Coordinator } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';

test("the first SQL request keeps the coordinator's event loop free: the planner loads and plans in a thread", async () => {
  const metrics = new ClinkMetrics();
  const coordinator = await Coordinator.start({ port: 0 }, { log: memoryLogger().log, metrics });
  const app = buildHttpApp({ role: 'coordinator', metrics, config: {}, coordinator });
  try {
    // The app's own start (routes, schemas) is not what is measured.
    await app.ready();
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode, 200);
    const before = performance.eventLoopUtilization();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/jobs/sql?mode=explain',
      headers: { 'content-type': 'application/sql' },
      payload:
        "CREATE TABLE t (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '5'); EXPLAIN SELECT a FROM t WHERE a > 1",
    });
    const busy = performance.eventLoopUtilization(before);
    assert.equal(res.statusCode, 200, res.body);
    // The planner on this loop kept it busy for over a second; in its thread, for the thread's start and the messages.
    assert.ok(
      busy.active < 500,
      `the event loop was busy for ${Math.round(busy.active)} ms of the ${Math.round(busy.active + busy.idle)} ms the request took`,
    );
  } finally {
    await app.close();
    await coordinator.stop();
  }
});
