/** `clink connectors`: the capability registry, as a table or JSON. */
import { BUILTIN_CAPABILITIES } from '../connectors/index.js';
import { formatTable } from './table.js';

export function connectorsCommand(json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(BUILTIN_CAPABILITIES) + '\n');
    return;
  }
  const rows = BUILTIN_CAPABILITIES.map((c) => ({
    connector: c.name,
    source: c.source
      ? `${c.source.delivery}${c.source.replayable ? `, replayable (${c.source.offsetModel})` : ''}`
      : '-',
    sink: c.sink ? `${c.sink.delivery}${c.sink.transactional ? ', transactional' : ''}` : '-',
    tls: c.tls ? 'yes' : 'no',
    description: c.description,
  }));
  process.stdout.write(formatTable(rows, 0, { sort: false }) + '\n');
}
