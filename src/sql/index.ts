/**
 * Streaming SQL (design record 015): the parser (statement text to the syntax tree of ast.ts, errors
 * with a 1-based byte offset), the printer, the session catalog, the binder (binder.ts) to a logical
 * plan (logical.ts), the optimizer's rules, and the physical planner that turns a plan into DataStream
 * calls with generated functions (codegen.ts, aggregates.ts). A SQL job is a script planned by every
 * process that loads it (sql-job.ts); a session (session.ts) runs statements for `clink sql` and the
 * coordinator's SQL route.
 */
export type * from './ast.js';
export { parseSql, parseExpression } from './parser.js';
export { printExpr, printQuery, printStatement, printType, printIdent } from './printer.js';
export { MAX_NESTING, SqlError } from './errors.js';
export {
  SqlCatalog,
  isCatalogStatement,
  type CatalogObject,
  type CatalogReply,
  type CatalogStatement,
} from './catalog.js';
export { typeName, type SqlType } from './types.js';
export { typeOf, FUNCTIONS, type Scope, type ScopeColumn } from './typing.js';
export { sqlJobDefinition, explainScript, buildSqlScript, COLLECT_NAME } from './sql-job.js';
export { SqlSession, type SqlResult, type SqlMode, type SqlRunOptions, type CompiledSqlJob } from './session.js';
export type { LogicalNode, Field } from './logical.js';
