// The rescale bench's job: an unbounded keyed stream whose sink logs when each batch arrives (one
// file per sink subtask, a wall-clock ms per line), so the bench can find the pause a rescale causes.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConnector, defineJob } from 'clink';

const arrivals = defineConnector<never, number>({
  name: 'arrivals',
  sink: {
    rescalable: true,
    createWriter(o: Record<string, unknown>, ctx) {
      const file = join(String(o.dir), `arrivals-${ctx.subtaskIndex}-${process.pid}.log`);
      let wrote = false;
      return {
        write() {
          wrote = true;
        },
        flush() {
          if (!wrote) return;
          wrote = false;
          appendFileSync(file, `${Date.now()}\n`);
        },
      };
    },
  },
});

export default defineJob({ name: 'rescale-probe', version: '1' }, (env) => {
  env
    .fromSource<{ id: number }>('datagen', { rowsPerSecond: Number(env.params.rate ?? 4_000) })
    .keyBy((r) => r.id % 64)
    .map((r) => r.id)
    .uid('ids')
    // A task of its own, so a hot rescale of 'ids' leaves the sinks running (they wait at the gate).
    .rebalance()
    .sinkTo(arrivals, { dir: env.params.dir! });
});
