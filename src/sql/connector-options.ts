/**
 * A table's WITH options, written as Flink writes them ('rows-per-second' = '10', 'fields.id.kind' =
 * 'sequence'), to the options object the connector's own schema checks: dotted keys nest, dashed keys
 * become camelCase, numbers and booleans are read from their text. datagen also takes Flink's names
 * ('number-of-rows', 'fields.<column>.kind' = 'random' | 'sequence', '.min', '.max', '.length') and
 * generates every column the options leave out, by its type.
 */
import { SqlError } from './errors.js';
import type { Field } from './logical.js';

type Json = Record<string, unknown>;

/** Flink's option names for our options, per connector. */
const ALIASES: Record<string, Record<string, string>> = {
  datagen: { 'number-of-rows': 'count' },
  kafka: {
    'properties.bootstrap.servers': 'bootstrapServers',
    'properties.group.id': 'groupId',
    'scan.startup.mode': 'startFrom',
    'scan.startup.timestamp-millis': 'startTimestampMs',
    'scan.bounded': 'bounded',
    format: 'valueFormat',
    'value.format': 'valueFormat',
    'key.format': 'keyFormat',
    'sink.delivery-guarantee': 'delivery',
    'sink.transactional-id-prefix': 'transactionalIdPrefix',
  },
};

/** Flink's values for our values, per connector and option. */
const VALUES: Record<string, Record<string, Record<string, string>>> = {
  kafka: { startFrom: { 'earliest-offset': 'earliest', 'latest-offset': 'latest' } },
};

/**
 * Options that belong to one side of a connector: a table is read and written with one set of WITH
 * options, and each side's schema refuses the other's.
 */
const ONE_SIDE: Record<string, { source: string[]; sink: string[] }> = {
  kafka: {
    source: [
      'startFrom',
      'startTimestampMs',
      'groupId',
      'bounded',
      'isolation',
      'watermarks',
      'partitionDiscoveryIntervalMs',
      'maxRecordsPerSecond',
      'fetchMaxBytes',
      'fetchMaxWaitMs',
    ],
    sink: [
      'delivery',
      'transactionalIdPrefix',
      'transactionTimeoutMs',
      'keyField',
      'maxRequestBytes',
      'maxBufferedRecords',
      'compression',
    ],
  },
  nats: {
    source: ['stream', 'startFrom', 'startSequence', 'bounded', 'bufferMessages'],
    sink: ['messageIdField', 'messageIdPrefix', 'maxPending'],
  },
  file: { source: [], sink: ['rollBytes'] },
};

/**
 * A file table in CSV ('format' = 'csv'): the file connector reads and writes it as lines, and the SQL
 * planner turns each line into a row of the table's columns and back (RFC 4180 quoting).
 */
export function isCsv(connector: string, options: Record<string, string>): boolean {
  return connector === 'file' && options.format === 'csv';
}

/** Connectors whose source records wrap the row (a Kafka record's value, a NATS message's): a table's row is that value. */
const ENVELOPES = new Set(['kafka', 'nats']);

export function rowIsValue(connector: string): boolean {
  return ENVELOPES.has(connector);
}

const camel = (k: string): string => k.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

function value(text: string): unknown {
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/** The connector options of a table read (`source`) or written (`sink`): `options` as written, `columns` its physical columns. */
export function connectorOptions(
  connector: string,
  options: Record<string, string>,
  columns: readonly Field[],
  at: number,
  side: 'source' | 'sink',
): Json {
  const out: Json = {};
  const other = ONE_SIDE[connector]?.[side === 'source' ? 'sink' : 'source'] ?? [];
  for (const [rawKey, raw] of Object.entries(options)) {
    const key = ALIASES[connector]?.[rawKey] ?? rawKey;
    if (other.includes(camel(key.split('.')[0]!))) continue;
    const text = VALUES[connector]?.[key]?.[raw] ?? raw;
    const path = key.split('.');
    let at_ = out;
    for (const [i, part] of path.entries()) {
      // Field names under datagen's `fields.` keep their spelling; option names become camelCase.
      const name = connector === 'datagen' && path[0] === 'fields' && i === 1 ? part : camel(part);
      if (i === path.length - 1) at_[name] = value(text);
      else {
        const next = at_[name];
        if (next !== undefined && (typeof next !== 'object' || next === null))
          throw new SqlError(
            `option '${rawKey}': '${path.slice(0, i + 1).join('.')}' is also given a value of its own`,
            at,
          );
        at_ = (at_[name] ??= {}) as Json;
      }
    }
  }
  if (isCsv(connector, options)) {
    out.format = 'lines';
    delete out.csv;
  }
  return connector === 'datagen' ? datagenFields(out, columns, at) : out;
}

/** datagen's fields: each column's generator, from Flink's option names or by the column's type. */
function datagenFields(o: Json, columns: readonly Field[], at: number): Json {
  const given = (o.fields ?? {}) as Record<string, Json>;
  for (const name of Object.keys(given)) {
    if (!columns.some((c) => c.name === name))
      throw new SqlError(`option 'fields.${name}...': the table has no column ${name}`, at);
  }
  const fields: Record<string, Json> = {};
  for (const c of columns) {
    const f = { ...(given[c.name] ?? {}) };
    const kind = f.kind;
    if (kind === 'sequence') {
      // Flink's sequence has start and end; ours counts from start for as many rows as there are.
      delete f.end;
    } else if (kind === undefined || kind === 'random') {
      const byType: Record<string, string> = {
        INT: 'int',
        BIGINT: 'int',
        DOUBLE: 'double',
        DECIMAL: 'double',
        STRING: 'string',
        BOOLEAN: 'boolean',
        TIMESTAMP: 'timestamp',
        TIMESTAMP_LTZ: 'timestamp',
      };
      const k = byType[c.type.kind];
      if (!k)
        throw new SqlError(
          `datagen cannot generate column ${c.name} of type ${c.type.kind}; give 'fields.${c.name}.kind'`,
          at,
        );
      f.kind = k;
    }
    if (typeof f.values === 'string') f.values = f.values.split(',').map((v) => value(v.trim()));
    if (f.values !== undefined) f.kind = 'oneOf';
    fields[c.name] = f;
  }
  return { ...o, fields };
}
