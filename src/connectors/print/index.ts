/** print: one line per record on standard output, prefixed `<subtask>> ` when the sink is parallel. */
import { inspect } from 'node:util';
import { z } from 'zod';
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';

const Options = z.object({ prefix: z.string().optional() }).strict();

export function formatRecord(v: unknown): string {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return inspect(v, { depth: 4, breakLength: Infinity });
  }
}

export function printConnector(stdout: (text: string) => void | Promise<void>): Connector<never, unknown> {
  return {
    name: 'print',
    sink: {
      validate: (o) => parseOptions('print', Options, o),
      createWriter(o: z.infer<typeof Options>, ctx) {
        const prefix = (o.prefix ?? '') + (ctx.parallelism > 1 ? `${ctx.subtaskIndex + 1}> ` : '');
        let lines: string[] = [];
        return {
          write(v) {
            lines.push(prefix + formatRecord(v));
          },
          flush() {
            if (lines.length === 0) return;
            const text = lines.join('\n') + '\n';
            lines = [];
            return stdout(text);
          },
        };
      },
    },
  };
}
