/**
 * State schemas (issue 53 point 4): what a keyed state declares it holds, recorded in the job's plan and
 * so in every checkpoint's identity. A restore compares the schema a state was checkpointed with to the
 * one it is declared with now, before anything deploys (coordinator/restore-gate.ts, `clink lint
 * --restore-from-dir`), as Flink's serializer snapshots do:
 *
 * - the same, or a compatible change (int widened to number, a field added as optional, a field
 *   removed, a value made optional, anything read as `any`): restored as stored;
 * - otherwise, when the declaration migrates from exactly the stored schema: each value is converted by
 *   the declared function as the state is restored;
 * - otherwise: refused, naming the operator, the state and both schemas.
 */

export type PrimitiveSchemaType = 'int' | 'number' | 'string' | 'boolean' | 'bigint' | 'any';

export type StateSchema =
  | { type: PrimitiveSchemaType }
  | { type: 'object'; fields: Record<string, StateSchema> }
  | { type: 'list'; of: StateSchema }
  | { type: 'map'; key: StateSchema; value: StateSchema }
  | { type: 'optional'; of: StateSchema };

export const STATE_KINDS = ['value', 'map', 'list'] as const;
export type StateKind = (typeof STATE_KINDS)[number];

/**
 * A keyed state as the plan records it: its kind and the schema of what it holds (a value state's value,
 * a map state's values with `key` for its keys, a list state's elements); `migrateFrom`: the schema its
 * declared migration converts from.
 */
export interface StateDeclarationSpec {
  kind: StateKind;
  schema: StateSchema;
  key?: StateSchema;
  migrateFrom?: StateSchema;
}

const PRIMITIVES: readonly string[] = ['int', 'number', 'string', 'boolean', 'bigint', 'any'];

/** The schema as one short line: `{id: int, name?: string}`, `list<number>`, `map<string, int>`. */
export function describeSchema(s: StateSchema): string {
  switch (s.type) {
    case 'object':
      return `{${Object.entries(s.fields)
        .map(([k, f]) => (f.type === 'optional' ? `${k}?: ${describeSchema(f.of)}` : `${k}: ${describeSchema(f)}`))
        .join(', ')}}`;
    case 'list':
      return `list<${describeSchema(s.of)}>`;
    case 'map':
      return `map<${describeSchema(s.key)}, ${describeSchema(s.value)}>`;
    case 'optional':
      return `${describeSchema(s.of)} | undefined`;
    default:
      return s.type;
  }
}

/** Why `s` is not a schema (a path and what is wrong), or undefined. */
export function schemaProblem(s: unknown, path = 'schema'): string | undefined {
  if (typeof s !== 'object' || s === null || typeof (s as { type?: unknown }).type !== 'string')
    return `${path} must be a schema (Schema.int(), Schema.object({...}), ...)`;
  const t = (s as { type: string }).type;
  if (PRIMITIVES.includes(t)) return undefined;
  const o = s as Record<string, unknown>;
  switch (t) {
    case 'object': {
      if (typeof o.fields !== 'object' || o.fields === null) return `${path}.fields must be an object of schemas`;
      for (const [k, f] of Object.entries(o.fields)) {
        const p = schemaProblem(f, `${path}.fields.${k}`);
        if (p) return p;
      }
      return undefined;
    }
    case 'list':
    case 'optional':
      return schemaProblem(o.of, `${path}.of`);
    case 'map':
      return schemaProblem(o.key, `${path}.key`) ?? schemaProblem(o.value, `${path}.value`);
    default:
      return `${path} has type '${t}', not one of ${[...PRIMITIVES, 'object', 'list', 'map', 'optional'].join(', ')}`;
  }
}

/**
 * Whether values stored under `stored` read as `declared` (undefined: they do), or the first place they
 * do not.
 */
export function schemaIncompatibility(stored: StateSchema, declared: StateSchema, path = ''): string | undefined {
  const at = (what: string): string => (path ? `${path}: ${what}` : what);
  if (declared.type === 'any') return undefined;
  if (declared.type === 'optional') {
    const inner = stored.type === 'optional' ? stored.of : stored;
    return schemaIncompatibility(inner, declared.of, path);
  }
  if (stored.type === 'optional') return at('a value that may be absent is declared as always present');
  if (stored.type === 'int' && declared.type === 'number') return undefined;
  if (stored.type !== declared.type)
    return at(`${describeSchema(stored)} cannot be read as ${describeSchema(declared)}`);
  switch (declared.type) {
    case 'object': {
      const fields = (stored as { fields: Record<string, StateSchema> }).fields;
      for (const [k, f] of Object.entries(declared.fields)) {
        const was = fields[k];
        const where = path ? `${path}.${k}` : k;
        if (was === undefined) {
          if (f.type === 'optional' || f.type === 'any') continue;
          return `${where}: a field added as required (values stored before have none); declare it optional`;
        }
        const why = schemaIncompatibility(was, f, where);
        if (why) return why;
      }
      return undefined;
    }
    case 'list':
      return schemaIncompatibility((stored as { of: StateSchema }).of, declared.of, `${path}[]`);
    case 'map': {
      const m = stored as { key: StateSchema; value: StateSchema };
      return (
        schemaIncompatibility(m.key, declared.key, `${path}<key>`) ??
        schemaIncompatibility(m.value, declared.value, `${path}<value>`)
      );
    }
    default:
      return undefined;
  }
}

/** Two schemas that say the same (a migration runs only from exactly its `from`). */
export const sameSchema = (a: StateSchema, b: StateSchema): boolean => canonical(a) === canonical(b);

function canonical(s: StateSchema): string {
  switch (s.type) {
    case 'object':
      return `{${Object.keys(s.fields)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${canonical(s.fields[k]!)}`)
        .join(',')}}`;
    case 'list':
    case 'optional':
      return `${s.type}(${canonical(s.of)})`;
    case 'map':
      return `map(${canonical(s.key)},${canonical(s.value)})`;
    default:
      return s.type;
  }
}

/** How a declared state restores from the declaration it was checkpointed with. */
export type StateRestoreVerdict = { restore: 'as-stored' } | { restore: 'migrate' } | { refuse: string };

export function stateRestoreVerdict(stored: StateDeclarationSpec, declared: StateDeclarationSpec): StateRestoreVerdict {
  if (stored.kind !== declared.kind)
    return { refuse: `it was checkpointed as a ${stored.kind} state and is declared as a ${declared.kind} state` };
  const keys = stored.key && declared.key ? schemaIncompatibility(stored.key, declared.key, '<key>') : undefined;
  if (keys) return { refuse: `its keys changed: ${keys}` };
  const why = schemaIncompatibility(stored.schema, declared.schema);
  if (!why) return { restore: 'as-stored' };
  if (declared.migrateFrom && sameSchema(declared.migrateFrom, stored.schema)) return { restore: 'migrate' };
  return {
    refuse:
      `it was checkpointed as ${describeSchema(stored.schema)} and is declared as ${describeSchema(declared.schema)} (${why})` +
      (declared.migrateFrom
        ? `; its migration converts from ${describeSchema(declared.migrateFrom)}, not from that`
        : ''),
  };
}
