/**
 * Declaring keyed state with its schema (`keyBy(...).process(fn, { states })`): the plan records each
 * state's kind and schema, so a restore whose checkpoint holds another schema is judged before anything
 * deploys (plan/state-schema.ts has the rules).
 *
 * @example
 * .process(fn, {
 *   states: {
 *     seen: States.value(Schema.int()),
 *     last: States.value(Schema.object({ at: Schema.number(), note: Schema.optional(Schema.string()) }), {
 *       migrate: { from: Schema.number(), fn: (at) => ({ at }) },
 *     }),
 *   },
 * })
 */
import { ClinkError } from '../errors.js';
import { schemaProblem, type StateDeclarationSpec, type StateKind, type StateSchema } from '../plan/index.js';

export type { StateSchema } from '../plan/index.js';

/** Schema builders: what a state's values are. */
export const Schema = {
  /** A whole number; widens to number. */
  int: (): StateSchema => ({ type: 'int' }),
  number: (): StateSchema => ({ type: 'number' }),
  string: (): StateSchema => ({ type: 'string' }),
  boolean: (): StateSchema => ({ type: 'boolean' }),
  bigint: (): StateSchema => ({ type: 'bigint' }),
  /** Anything: every stored schema reads as it, and it reads as nothing narrower. */
  any: (): StateSchema => ({ type: 'any' }),
  object: (fields: Record<string, StateSchema>): StateSchema => ({ type: 'object', fields }),
  list: (of: StateSchema): StateSchema => ({ type: 'list', of }),
  map: (key: StateSchema, value: StateSchema): StateSchema => ({ type: 'map', key, value }),
  /** May be absent: a field added later, or a value not always set. */
  optional: (of: StateSchema): StateSchema => ({ type: 'optional', of }),
} as const;

/** Converts one value checkpointed under schema `from` to the declared schema, as the state is restored. */
export interface StateMigration {
  from: StateSchema;
  fn: (old: unknown) => unknown;
}

/** A declared keyed state. A map state's schema is its values'; a list state's, its elements'. */
export interface StateDeclaration {
  kind: StateKind;
  schema: StateSchema;
  /** A map state's keys. */
  key?: StateSchema;
  migrate?: StateMigration;
}

export const States = {
  value: (schema: StateSchema, o: { migrate?: StateMigration } = {}): StateDeclaration => ({
    kind: 'value',
    schema,
    ...o,
  }),
  map: (key: StateSchema, value: StateSchema, o: { migrate?: StateMigration } = {}): StateDeclaration => ({
    kind: 'map',
    key,
    schema: value,
    ...o,
  }),
  list: (element: StateSchema, o: { migrate?: StateMigration } = {}): StateDeclaration => ({
    kind: 'list',
    schema: element,
    ...o,
  }),
} as const;

export interface KeyedProcessOptions {
  /** The states the function uses, by name, with their schemas. */
  states?: Record<string, StateDeclaration>;
}

/** The plan's part of each declaration and the migration functions, checked; a bad one throws naming it. */
export function declarationsOf(
  where: string,
  states: Record<string, StateDeclaration> | undefined,
): { specs: Record<string, StateDeclarationSpec>; migrations: Record<string, (old: unknown) => unknown> } {
  const specs: Record<string, StateDeclarationSpec> = {};
  const migrations: Record<string, (old: unknown) => unknown> = {};
  for (const [name, d] of Object.entries(states ?? {})) {
    const what = `${where}: state '${name}'`;
    const bad = (why: string): never => {
      throw new ClinkError(
        'CLINK_ERR_JOB_DEFINITION',
        `${what} ${why}; declare it with States.value, States.map or States.list`,
      );
    };
    if (name.startsWith('__')) bad("has a name starting with '__', which is the engine's");
    if (typeof d !== 'object' || d === null || !['value', 'map', 'list'].includes(d.kind)) bad('is not a declaration');
    const problem =
      schemaProblem(d.schema, 'schema') ??
      (d.kind === 'map' ? schemaProblem(d.key, 'key') : undefined) ??
      (d.migrate ? schemaProblem(d.migrate.from, 'migrate.from') : undefined);
    if (problem) bad(`is declared wrong: ${problem}`);
    if (d.migrate && typeof d.migrate.fn !== 'function') bad('has a migration without fn');
    specs[name] = {
      kind: d.kind,
      schema: d.schema,
      ...(d.kind === 'map' ? { key: d.key! } : {}),
      ...(d.migrate ? { migrateFrom: d.migrate.from } : {}),
    };
    if (d.migrate) migrations[name] = d.migrate.fn;
  }
  return { specs, migrations };
}
