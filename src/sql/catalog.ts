/**
 * The session catalog: the tables and views `CREATE` made, checked as they are made (a known
 * connector, unique columns, a watermark on a time column, key columns that exist), and the other
 * catalog statements (DROP, ALTER TABLE ... RENAME, SHOW TABLES, DESCRIBE). Each object is kept as its
 * canonical CREATE statement; with a directory (`--sql-catalog-dir`) the permanent ones are written to
 * `catalog.json` durably after each change and read back at open. Temporary objects live in the
 * session only, and shadow a permanent object of the same name, as in Flink.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileDurably } from '../util/index.js';
import type { ColumnDef, Name, Statement } from './ast.js';
import { SqlError } from './errors.js';
import { parseSql } from './parser.js';
import { printExpr, printStatement, printType } from './printer.js';

export type CatalogStatement = Extract<
  Statement,
  { kind: 'createTable' | 'createView' | 'drop' | 'alterTableRename' | 'showTables' | 'describe' }
>;
type CreateTable = Extract<Statement, { kind: 'createTable' }>;
type CreateView = Extract<Statement, { kind: 'createView' }>;

export interface CatalogObject {
  name: string;
  kind: 'table' | 'view';
  temporary: boolean;
  /** Its CREATE statement, canonically printed. */
  sql: string;
  statement: CreateTable | CreateView;
}

export interface CatalogReply {
  message: string;
  rows?: Record<string, unknown>[];
}

const CATALOG_FILE = 'catalog.json';
const CATALOG_VERSION = 1;
const TIME_TYPES = new Set(['TIMESTAMP', 'TIMESTAMP_LTZ']);

export function isCatalogStatement(s: Statement): s is CatalogStatement {
  return ['createTable', 'createView', 'drop', 'alterTableRename', 'showTables', 'describe'].includes(s.kind);
}

const nameOf = (n: Name): string => n.parts.join('.');

export class SqlCatalog {
  private permanent = new Map<string, CatalogObject>();
  private readonly temporary = new Map<string, CatalogObject>();

  private constructor(
    /** The connectors this build has: a table naming another is refused at CREATE. */
    private readonly connectors: ReadonlySet<string>,
    private readonly dir: string | undefined,
  ) {}

  /** A catalog, with what `dir` holds when given (a missing file is an empty catalog). */
  static async open(connectors: Iterable<string>, dir?: string): Promise<SqlCatalog> {
    const c = new SqlCatalog(new Set(connectors), dir);
    if (dir === undefined) return c;
    await mkdir(dir, { recursive: true });
    let text: string;
    try {
      text = await readFile(join(dir, CATALOG_FILE), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return c;
      throw err;
    }
    const saved = JSON.parse(text) as { version: number; objects: string[] };
    if (saved.version !== CATALOG_VERSION)
      throw new SqlError(
        `${join(dir, CATALOG_FILE)} is catalog version ${saved.version}; this clink reads version ${CATALOG_VERSION}`,
        0,
      );
    for (const sql of saved.objects) {
      const [s] = parseSql(sql);
      if (s?.kind === 'createTable' || s?.kind === 'createView') c.permanent.set(nameOf(s.name), c.object(s));
    }
    return c;
  }

  /** The object a name means now: a temporary one shadows a permanent one. */
  get(name: string): CatalogObject | undefined {
    return this.temporary.get(name) ?? this.permanent.get(name);
  }

  list(): CatalogObject[] {
    const names = new Set([...this.permanent.keys(), ...this.temporary.keys()]);
    return [...names].sort().map((n) => this.get(n)!);
  }

  async execute(s: CatalogStatement): Promise<CatalogReply> {
    switch (s.kind) {
      case 'createTable':
      case 'createView':
        return this.create(s);
      case 'drop':
        return this.drop(s);
      case 'alterTableRename':
        return this.rename(s);
      case 'showTables':
        return {
          message: this.list().length === 1 ? '1 table or view' : `${this.list().length} tables and views`,
          rows: this.list().map((o) => ({ name: o.name, kind: o.kind, temporary: o.temporary })),
        };
      case 'describe':
        return this.describe(s.name);
    }
  }

  private async create(s: CreateTable | CreateView): Promise<CatalogReply> {
    const name = nameOf(s.name);
    const scope = s.temporary ? this.temporary : this.permanent;
    if (scope.has(name)) {
      if (s.ifNotExists) return { message: `${name} already exists; left as it is` };
      throw new SqlError(
        `${s.temporary ? 'a temporary ' : ''}${scope.get(name)!.kind} named ${name} already exists (DROP it first, or CREATE ... IF NOT EXISTS)`,
        s.name.at,
      );
    }
    if (s.kind === 'createTable') this.checkTable(s);
    await this.change(s.temporary, (m) => m.set(name, this.object(s)));
    return {
      message: `created ${s.temporary ? 'temporary ' : ''}${s.kind === 'createTable' ? 'table' : 'view'} ${name}`,
    };
  }

  private checkTable(s: CreateTable): void {
    const connector = s.options.find((o) => o.key === 'connector')?.value;
    if (connector === undefined)
      throw new SqlError(
        `table ${nameOf(s.name)} names no connector: add WITH ('connector' = '...'), one of ${[...this.connectors].sort().join(', ')}`,
        s.at,
      );
    if (!this.connectors.has(connector))
      throw new SqlError(
        `table ${nameOf(s.name)} names connector '${connector}', which this build does not have; it has ${[...this.connectors].sort().join(', ')}`,
        s.at,
      );
    const seen = new Map<string, ColumnDef>();
    for (const c of s.columns) {
      if (c.name === '__proto__')
        throw new SqlError('the column name __proto__ is reserved (rows are JavaScript objects); choose another', c.at);
      if (seen.has(c.name)) throw new SqlError(`column ${c.name} is defined twice in table ${nameOf(s.name)}`, c.at);
      seen.set(c.name, c);
    }
    if (s.watermark) {
      const column = seen.get(s.watermark.column);
      if (!column)
        throw new SqlError(
          `WATERMARK FOR ${s.watermark.column}: table ${nameOf(s.name)} has no such column`,
          s.watermark.at,
        );
      if (column.type && !TIME_TYPES.has(column.type.name))
        throw new SqlError(
          `WATERMARK FOR ${s.watermark.column}: the column is ${printType(column.type)}; a watermark needs a TIMESTAMP(3) or TIMESTAMP_LTZ(3) column`,
          s.watermark.at,
        );
    }
    for (const k of s.primaryKey ?? [])
      if (!seen.has(k)) throw new SqlError(`PRIMARY KEY (${k}): table ${nameOf(s.name)} has no such column`, s.at);
  }

  private async drop(s: Extract<Statement, { kind: 'drop' }>): Promise<CatalogReply> {
    const name = nameOf(s.name);
    const scope = s.temporary ? this.temporary : this.permanent;
    const o = scope.get(name);
    if (!o) {
      if (s.ifExists) return { message: `${name} does not exist; nothing dropped` };
      throw new SqlError(
        `no ${s.temporary ? 'temporary ' : ''}${s.object.toLowerCase()} named ${name} (SHOW TABLES lists them)`,
        s.name.at,
      );
    }
    if (o.kind !== s.object.toLowerCase())
      throw new SqlError(`${name} is a ${o.kind}: use DROP ${o.kind.toUpperCase()}`, s.at);
    await this.change(s.temporary, (m) => m.delete(name));
    return { message: `dropped ${o.kind} ${name}` };
  }

  private async rename(s: Extract<Statement, { kind: 'alterTableRename' }>): Promise<CatalogReply> {
    const from = nameOf(s.name);
    const to = nameOf(s.to);
    const temporary = this.temporary.has(from);
    const scope = temporary ? this.temporary : this.permanent;
    const o = scope.get(from);
    if (!o || o.kind !== 'table') throw new SqlError(`no table named ${from} (SHOW TABLES lists them)`, s.name.at);
    if (scope.has(to)) throw new SqlError(`${to} already exists`, s.to.at);
    await this.change(temporary, (m) => {
      m.delete(from);
      m.set(to, this.object({ ...o.statement, name: s.to }));
    });
    return { message: `renamed table ${from} to ${to}` };
  }

  private describe(n: Name): CatalogReply {
    const o = this.get(nameOf(n));
    if (!o) throw new SqlError(`no table or view named ${nameOf(n)} (SHOW TABLES lists them)`, n.at);
    if (o.statement.kind === 'createView')
      return { message: `view ${o.name}`, rows: [{ name: o.name, query: printStatement(o.statement.query) }] };
    const t = o.statement;
    return {
      message: `table ${o.name} (connector ${t.options.find((x) => x.key === 'connector')?.value})`,
      rows: t.columns.map((c) => ({
        name: c.name,
        type: c.type ? printType(c.type) : 'computed',
        null: !c.notNull,
        key: t.primaryKey?.includes(c.name) ?? false,
        extras: [
          c.computed ? `AS ${printExpr(c.computed)}` : '',
          t.watermark?.column === c.name ? `WATERMARK AS ${printExpr(t.watermark.expr)}` : '',
        ]
          .filter(Boolean)
          .join('; '),
      })),
    };
  }

  private object(s: CreateTable | CreateView): CatalogObject {
    return {
      name: nameOf(s.name),
      kind: s.kind === 'createTable' ? 'table' : 'view',
      temporary: s.temporary,
      sql: printStatement(s),
      statement: s,
    };
  }

  /**
   * Apply a change; a change to the permanent objects takes effect only once written, so a failed write
   * (a full disk) leaves the catalog as it was and the statement fails with the StorageError.
   */
  private async change(temporary: boolean, fn: (m: Map<string, CatalogObject>) => void): Promise<void> {
    if (temporary) {
      fn(this.temporary);
      return;
    }
    const next = new Map(this.permanent);
    fn(next);
    if (this.dir !== undefined) {
      const body =
        JSON.stringify({ version: CATALOG_VERSION, objects: [...next.values()].map((o) => o.sql) }, null, 2) + '\n';
      await writeFileDurably(join(this.dir, CATALOG_FILE), [Buffer.from(body)]);
    }
    this.permanent = next;
  }
}
