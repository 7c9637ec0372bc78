/**
 * Streaming SQL (design record 015). So far: the parser (statement text to the syntax tree of ast.ts,
 * errors with a 1-based byte offset), the printer that spells a tree back as SQL, and the session
 * catalog (CREATE/DROP/ALTER/SHOW/DESCRIBE, persisted to a directory). The binder, optimizer and planner
 * to a JobGraphSpec come next.
 */
export type * from './ast.js';
export { parseSql, parseExpression } from './parser.js';
export { printExpr, printQuery, printStatement, printType, printIdent } from './printer.js';
export { SqlError } from './errors.js';
export { SqlCatalog, isCatalogStatement, type CatalogObject, type CatalogReply, type CatalogStatement } from './catalog.js';
export { typeName, type SqlType } from './types.js';
export { typeOf, FUNCTIONS, type Scope, type ScopeColumn } from './typing.js';
