/** blackhole: a sink that drops every record (the sink benchmarks use; its operator still counts them). */
import { z } from 'zod';
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';

export const blackhole: Connector<never, unknown> = {
  name: 'blackhole',
  sink: {
    validate: (o) => parseOptions('blackhole', z.object({}).strict(), o),
    rescalable: true,
    createWriter: () => ({ write() {} }),
  },
};
