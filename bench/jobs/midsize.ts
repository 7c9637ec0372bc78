// A mid-sized job module: it bundles a schema library (zod) and validates every record with it.
import { defineJob } from 'clink';
import { z } from 'zod';

const Reading = z.object({ id: z.number().int(), sensor: z.string().min(1), value: z.number() });

export default defineJob({ name: 'midsize', version: '1' }, (env) => {
  env
    .fromSource<{ id: number }>('datagen', { count: 1_000 })
    .map((r) => Reading.parse({ id: r.id, sensor: `s${r.id % 7}`, value: r.id / 3 }))
    .collect();
});
