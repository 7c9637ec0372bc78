/**
 * The SQL parser (Chevrotain's embedded-actions parser, design record 015): statement text to the
 * syntax tree of ast.ts. This file holds statements and queries; expressions, types and names are in
 * expression-parser.ts. One parser instance serves every call (Chevrotain's grammar analysis runs
 * once); `parseSql` resets it per statement text.
 */
import type { IToken } from 'chevrotain';
import type { ColumnDef, Expr, Query, Select, SelectItem, Statement, TableRef, TvfArg } from './ast.js';
import { MAX_NESTING, SqlError } from './errors.js';
import { SqlExpressionParser, stringValue } from './expression-parser.js';
import { K, NumberLiteral, P, sqlLexer, StringLiteral } from './lexer.js';

class SqlParser extends SqlExpressionParser {
  constructor() {
    super();
    this.performSelfAnalysis();
  }

  statements = this.RULE('statements', (): Statement[] => {
    const out: Statement[] = [];
    this.OPTION(() => out.push(this.SUBRULE(this.statement)));
    this.MANY(() => {
      this.CONSUME(P.Semicolon);
      this.OPTION2(() => out.push(this.SUBRULE2(this.statement)));
    });
    return out;
  });

  statement = this.RULE('statement', (): Statement =>
    this.OR([
      { ALT: () => this.SUBRULE(this.create) },
      { ALT: () => this.SUBRULE(this.drop) },
      { ALT: () => this.SUBRULE(this.alter) },
      { ALT: () => this.SUBRULE(this.show) },
      { ALT: () => this.SUBRULE(this.describe) },
      { ALT: () => this.SUBRULE(this.explain) },
      { ALT: () => this.SUBRULE(this.insert) },
      { ALT: () => this.SUBRULE(this.statementSet) },
      { ALT: () => this.SUBRULE(this.setStatement) },
      { ALT: () => this.SUBRULE(this.resetStatement) },
      { ALT: () => this.SUBRULE(this.query) },
    ]),
  );

  private create = this.RULE('create', (): Statement => {
    const at = this.CONSUME(K.CREATE).startOffset;
    const temporary = this.OPTION(() => this.CONSUME(K.TEMPORARY)) !== undefined;
    return this.OR([
      { ALT: () => this.SUBRULE(this.createTableRest, { ARGS: [at, temporary] }) },
      { ALT: () => this.SUBRULE(this.createViewRest, { ARGS: [at, temporary] }) },
    ]);
  });

  private ifNotExists = this.RULE('ifNotExists', (): boolean => {
    let present = false;
    this.OPTION(() => {
      this.CONSUME(K.IF);
      this.CONSUME(K.NOT);
      this.CONSUME(K.EXISTS);
      present = true;
    });
    return present;
  });

  private createTableRest = this.RULE('createTableRest', (at: number, temporary: boolean): Statement => {
    this.CONSUME(K.TABLE);
    const ifNotExists = this.SUBRULE(this.ifNotExists);
    const name = this.SUBRULE(this.name);
    const columns: ColumnDef[] = [];
    let watermark: { column: string; expr: Expr; at: number } | undefined;
    let primaryKey: string[] | undefined;
    this.CONSUME(P.LParen);
    this.AT_LEAST_ONE_SEP({
      SEP: P.Comma,
      DEF: () =>
        this.OR([
          {
            ALT: () => {
              const w = this.CONSUME(K.WATERMARK).startOffset;
              this.CONSUME(K.FOR);
              const column = this.SUBRULE(this.ident);
              this.CONSUME(K.AS);
              watermark = { column, expr: this.SUBRULE(this.expr), at: w };
            },
            GATE: () => this.LA(2).tokenType === K.FOR,
          },
          {
            ALT: () => {
              this.CONSUME(K.PRIMARY);
              this.CONSUME(K.KEY);
              primaryKey = this.SUBRULE(this.identList);
              this.CONSUME(K.NOT);
              this.CONSUME(K.ENFORCED);
            },
          },
          { ALT: () => columns.push(this.SUBRULE(this.columnDef)) },
        ]),
    });
    this.CONSUME(P.RParen);
    const options = this.SUBRULE(this.withOptions);
    return {
      kind: 'createTable',
      name,
      ifNotExists,
      temporary,
      columns,
      ...(watermark ? { watermark } : {}),
      ...(primaryKey ? { primaryKey } : {}),
      options,
      at,
    };
  });

  private columnDef = this.RULE('columnDef', (): ColumnDef => {
    const first = this.LA(1);
    const name = this.SUBRULE(this.ident);
    return this.OR([
      {
        ALT: () => (
          this.CONSUME(K.AS),
          { name, computed: this.SUBRULE(this.expr), notNull: false, at: first.startOffset }
        ),
      },
      {
        ALT: () => {
          const type = this.SUBRULE(this.dataType);
          let notNull = false;
          this.OPTION(() => {
            this.CONSUME(K.NOT);
            this.CONSUME(K.NULL);
            notNull = true;
          });
          return { name, type, notNull, at: first.startOffset };
        },
      },
    ]);
  });

  private withOptions = this.RULE('withOptions', (): { key: string; value: string }[] => {
    const options: { key: string; value: string }[] = [];
    this.OPTION(() => {
      this.CONSUME(K.WITH);
      this.CONSUME(P.LParen);
      this.MANY_SEP({
        SEP: P.Comma,
        DEF: () => {
          const key = stringValue(this.CONSUME(StringLiteral));
          this.CONSUME(P.Eq);
          options.push({ key, value: stringValue(this.CONSUME2(StringLiteral)) });
        },
      });
      this.CONSUME(P.RParen);
    });
    return options;
  });

  private createViewRest = this.RULE('createViewRest', (at: number, temporary: boolean): Statement => {
    this.CONSUME(K.VIEW);
    const ifNotExists = this.SUBRULE(this.ifNotExists);
    const name = this.SUBRULE(this.name);
    this.CONSUME(K.AS);
    return { kind: 'createView', name, temporary, ifNotExists, query: this.SUBRULE(this.query), at };
  });

  private drop = this.RULE('drop', (): Statement => {
    const at = this.CONSUME(K.DROP).startOffset;
    const temporary = this.OPTION(() => this.CONSUME(K.TEMPORARY)) !== undefined;
    const object = this.OR([
      { ALT: () => (this.CONSUME(K.TABLE), 'TABLE' as const) },
      { ALT: () => (this.CONSUME(K.VIEW), 'VIEW' as const) },
    ]);
    let ifExists = false;
    this.OPTION2(() => {
      this.CONSUME(K.IF);
      this.CONSUME(K.EXISTS);
      ifExists = true;
    });
    return { kind: 'drop', object, name: this.SUBRULE(this.name), ifExists, temporary, at };
  });

  private alter = this.RULE('alter', (): Statement => {
    const at = this.CONSUME(K.ALTER).startOffset;
    this.CONSUME(K.TABLE);
    const name = this.SUBRULE(this.name);
    this.CONSUME(K.RENAME);
    this.CONSUME(K.TO);
    return { kind: 'alterTableRename', name, to: this.SUBRULE2(this.name), at };
  });

  private show = this.RULE('show', (): Statement => {
    const at = this.CONSUME(K.SHOW).startOffset;
    this.CONSUME(K.TABLES);
    return { kind: 'showTables', at };
  });

  private describe = this.RULE('describe', (): Statement => {
    const at = this.CONSUME(K.DESCRIBE).startOffset;
    return { kind: 'describe', name: this.SUBRULE(this.name), at };
  });

  private explain = this.RULE('explain', (): Statement => {
    const at = this.CONSUME(K.EXPLAIN).startOffset;
    return { kind: 'explain', statement: this.SUBRULE(this.statement), at };
  });

  private insert = this.RULE('insert', (): Extract<Statement, { kind: 'insert' }> => {
    const at = this.CONSUME(K.INSERT).startOffset;
    this.CONSUME(K.INTO);
    const table = this.SUBRULE(this.name);
    return { kind: 'insert', table, query: this.SUBRULE(this.query), at };
  });

  private setStatement = this.RULE('setStatement', (): Statement => {
    const at = this.CONSUME(K.SET).startOffset;
    let key: string | undefined;
    let value: string | undefined;
    this.OPTION(() => {
      key = stringValue(this.CONSUME(StringLiteral));
      this.CONSUME(P.Eq);
      value = stringValue(this.CONSUME2(StringLiteral));
    });
    return key === undefined ? { kind: 'set', at } : { kind: 'set', key, value: value!, at };
  });

  private resetStatement = this.RULE('resetStatement', (): Statement => {
    const at = this.CONSUME(K.RESET).startOffset;
    const key = this.OPTION(() => stringValue(this.CONSUME(StringLiteral)));
    return key === undefined ? { kind: 'reset', at } : { kind: 'reset', key, at };
  });

  private statementSet = this.RULE('statementSet', (): Statement => {
    const at = this.CONSUME(K.EXECUTE).startOffset;
    this.CONSUME(K.STATEMENT);
    this.CONSUME(K.SET);
    this.CONSUME(K.BEGIN);
    const inserts: Extract<Statement, { kind: 'insert' }>[] = [];
    this.AT_LEAST_ONE(() => {
      inserts.push(this.SUBRULE(this.insert));
      this.CONSUME(P.Semicolon);
    });
    this.CONSUME(K.END);
    return { kind: 'statementSet', inserts, at };
  });

  query = this.RULE('query', (): Query => {
    const at = this.LA(1).startOffset;
    let body: Query['body'] = this.SUBRULE(this.queryTerm);
    this.MANY(() => {
      const u = this.CONSUME(K.UNION).startOffset;
      const all = this.OPTION(() => this.CONSUME(K.ALL)) !== undefined;
      const right = this.SUBRULE2(this.queryTerm);
      body = { kind: 'union', all, left: wrap(body, at), right: wrap(right, u), at: u };
    });
    const orderBy = this.SUBRULE(this.orderByClause);
    let limit: number | undefined;
    this.OPTION2(() => {
      this.CONSUME(K.LIMIT);
      limit = Number(this.CONSUME(NumberLiteral).image);
    });
    return { kind: 'query', body, orderBy, ...(limit !== undefined ? { limit } : {}), at };
  });

  private queryTerm = this.RULE('queryTerm', (): Query['body'] =>
    this.OR([
      { ALT: () => this.SUBRULE(this.select) },
      {
        ALT: () => {
          this.CONSUME(P.LParen);
          const q = this.SUBRULE(this.query);
          this.CONSUME(P.RParen);
          return q.body;
        },
      },
    ]),
  );

  private select = this.RULE('select', (): Select => {
    const at = this.CONSUME(K.SELECT).startOffset;
    const distinct = this.OPTION(() => this.CONSUME(K.DISTINCT)) !== undefined;
    const items: SelectItem[] = [];
    this.AT_LEAST_ONE_SEP({ SEP: P.Comma, DEF: () => items.push(this.SUBRULE(this.selectItem)) });
    const from = this.OPTION2(() => (this.CONSUME(K.FROM), this.SUBRULE(this.tableRef)));
    const where = this.OPTION3(() => (this.CONSUME(K.WHERE), this.SUBRULE(this.expr)));
    const groupBy: Expr[] = [];
    this.OPTION4(() => {
      this.CONSUME(K.GROUP);
      this.CONSUME(K.BY);
      this.AT_LEAST_ONE_SEP2({ SEP: P.Comma, DEF: () => groupBy.push(this.SUBRULE2(this.expr)) });
    });
    const having = this.OPTION5(() => (this.CONSUME(K.HAVING), this.SUBRULE3(this.expr)));
    return {
      kind: 'select',
      distinct,
      items,
      ...(from ? { from } : {}),
      ...(where ? { where } : {}),
      groupBy,
      ...(having ? { having } : {}),
      at,
    };
  });

  private selectItem = this.RULE('selectItem', (): SelectItem => {
    const expr = this.SUBRULE(this.expr);
    const alias = this.SUBRULE(this.alias);
    return alias === undefined ? { expr } : { expr, alias };
  });

  private alias = this.RULE('alias', (): string | undefined =>
    this.OPTION(() => {
      this.OPTION2(() => this.CONSUME(K.AS));
      return this.SUBRULE(this.ident);
    }),
  );

  private tableRef = this.RULE('tableRef', (): TableRef => {
    let left = this.SUBRULE(this.tablePrimary);
    this.MANY(() => {
      const at = this.LA(1).startOffset;
      this.OR([
        {
          // `FROM a, b`: a cross join, its condition in WHERE (Nexmark q3 and q8 are written so).
          ALT: () => {
            this.CONSUME(P.Comma);
            left = { kind: 'join', type: 'CROSS', left, right: this.SUBRULE3(this.tablePrimary), at };
          },
        },
        {
          ALT: () => {
            const type = this.OPTION2(() => this.SUBRULE(this.joinType)) ?? 'INNER';
            this.CONSUME(K.JOIN);
            const right = this.SUBRULE2(this.tablePrimary);
            const on = this.OPTION(() => (this.CONSUME(K.ON), this.SUBRULE(this.expr)));
            left = { kind: 'join', type, left, right, ...(on ? { on } : {}), at };
          },
        },
      ]);
    });
    return left;
  });

  private joinType = this.RULE('joinType', (): 'INNER' | 'LEFT' | 'RIGHT' | 'FULL' | 'CROSS' =>
    this.OR([
      { ALT: () => (this.CONSUME(K.INNER), 'INNER' as const) },
      { ALT: () => (this.CONSUME(K.LEFT), this.OPTION(() => this.CONSUME(K.OUTER)), 'LEFT' as const) },
      { ALT: () => (this.CONSUME(K.RIGHT), this.OPTION2(() => this.CONSUME2(K.OUTER)), 'RIGHT' as const) },
      { ALT: () => (this.CONSUME(K.FULL), this.OPTION3(() => this.CONSUME3(K.OUTER)), 'FULL' as const) },
      { ALT: () => (this.CONSUME(K.CROSS), 'CROSS' as const) },
    ]),
  );

  private tablePrimary = this.RULE('tablePrimary', (): TableRef => {
    const at = this.LA(1).startOffset;
    const ref = this.OR([
      {
        ALT: (): TableRef => {
          this.CONSUME(K.TABLE);
          this.CONSUME(P.LParen);
          const name = this.SUBRULE(this.ident);
          this.CONSUME2(P.LParen);
          const args: TvfArg[] = [];
          this.MANY_SEP({ SEP: P.Comma, DEF: () => args.push(this.SUBRULE(this.tvfArg)) });
          this.CONSUME(P.RParen);
          this.CONSUME2(P.RParen);
          return { kind: 'tvf', name: this.ACTION(() => name.toUpperCase()) ?? '', args, at };
        },
      },
      {
        ALT: (): TableRef => {
          this.CONSUME3(P.LParen);
          const query = this.SUBRULE(this.query);
          this.CONSUME3(P.RParen);
          return { kind: 'subquery', query, at };
        },
      },
      { ALT: (): TableRef => ({ kind: 'table', name: this.SUBRULE(this.name), at }) },
    ]);
    const alias = this.SUBRULE(this.alias);
    return alias === undefined || ref.kind === 'join' ? ref : { ...ref, alias };
  });

  private tvfArg = this.RULE('tvfArg', (): TvfArg => {
    // Named arguments (`DATA => TABLE t`) are accepted and read by position.
    this.OPTION({
      GATE: () => this.LA(2).tokenType === P.Arrow,
      DEF: () => (this.SUBRULE(this.ident), this.CONSUME(P.Arrow)),
    });
    const at = this.LA(1).startOffset;
    return this.OR([
      { ALT: (): TvfArg => (this.CONSUME(K.TABLE), { kind: 'tableArg', name: this.SUBRULE(this.name), at }) },
      {
        ALT: (): TvfArg => (
          this.CONSUME(K.DESCRIPTOR),
          { kind: 'descriptor', columns: this.SUBRULE(this.identList), at }
        ),
        GATE: () => this.LA(2).tokenType === P.LParen,
      },
      { ALT: (): TvfArg => ({ kind: 'exprArg', expr: this.SUBRULE(this.expr), at }) },
    ]);
  });

  private identList = this.RULE('identList', (): string[] => {
    const names: string[] = [];
    this.CONSUME(P.LParen);
    this.AT_LEAST_ONE_SEP({ SEP: P.Comma, DEF: () => names.push(this.SUBRULE(this.ident)) });
    this.CONSUME(P.RParen);
    return names;
  });
}

function wrap(body: Query['body'], at: number): Query {
  return { kind: 'query', body, orderBy: [], at };
}

const parser = new SqlParser();

/** Parse statement text: every statement in it, in order. Throws SqlError with the position. */
export function parseSql(text: string): Statement[] {
  const lexed = sqlLexer.tokenize(text);
  const bad = lexed.errors[0];
  if (bad) throw new SqlError(`unexpected character '${text.slice(bad.offset, bad.offset + 1)}'`, bad.offset, text);
  // Refused before parsing: a stack overflow inside the parser can leave it failing with another error.
  let depth = 0;
  for (const t of lexed.tokens) {
    if (t.tokenType === P.LParen && ++depth > MAX_NESTING) throw SqlError.tooDeep(t.startOffset, text);
    if (t.tokenType === P.RParen) depth--;
  }
  parser.input = lexed.tokens;
  let statements: Statement[];
  try {
    statements = parser.statements();
  } catch (err) {
    if (err instanceof SqlError) throw err.withText(text);
    throw err;
  }
  const e = parser.errors[0];
  if (e)
    throw new SqlError(
      syntaxMessage(e.token, e.message),
      Number.isNaN(e.token.startOffset) ? text.length : e.token.startOffset,
      text,
    );
  return statements;
}

/** Parse one expression (tests and computed defaults). */
export function parseExpression(text: string): Expr {
  const lexed = sqlLexer.tokenize(text);
  parser.input = lexed.tokens;
  const e = parser.expr();
  if (parser.errors[0])
    throw new SqlError(
      syntaxMessage(parser.errors[0].token, parser.errors[0].message),
      parser.errors[0].token.startOffset,
      text,
    );
  return e;
}

function syntaxMessage(token: IToken, message: string): string {
  const found = token.tokenType.name === 'EOF' ? 'end of the statement' : `'${token.image}'`;
  const expected = /one of these possible Token sequences:|Expecting token of type --> (\w+) <--/.exec(message);
  if (expected?.[1]) return `expected ${describeToken(expected[1])} but found ${found}`;
  return `unexpected ${found}`;
}

function describeToken(name: string): string {
  const punct: Record<string, string> = {
    LParen: "'('",
    RParen: "')'",
    Comma: "','",
    Semicolon: "';'",
    Eq: "'='",
    Identifier: 'a name',
    StringLiteral: 'a string',
    NumberLiteral: 'a number',
    Gt: "'>'",
    Lt: "'<'",
    Arrow: "'=>'",
  };
  return punct[name] ?? name;
}
