/**
 * The expression half of the SQL parser: expressions by precedence (loosest first: OR, AND, NOT,
 * comparisons and IS/BETWEEN/IN/LIKE, + - ||, * / %, unary signs), ORDER BY lists, window specs,
 * types and names. parser.ts extends it with statements and queries; Chevrotain's grammar analysis runs
 * once, in the most derived constructor.
 */
import { EmbeddedActionsParser, type IToken } from 'chevrotain';
import type { BinaryOp, DataType, Expr, FrameBound, IntervalUnit, Name, OrderItem, WindowSpec } from './ast.js';
import { SqlError } from './errors.js';
import {
  ALL_TOKENS,
  Identifier,
  K,
  NonReservedKeyword,
  NumberLiteral,
  P,
  QuotedIdentifier,
  StringLiteral,
} from './lexer.js';

const INTERVAL_UNITS = new Set<IntervalUnit>(['SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR']);
type SimpleTypeName = 'INT' | 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'DATE';
const SIMPLE_TYPES: Record<string, SimpleTypeName> = {
  INT: 'INT',
  INTEGER: 'INT',
  BIGINT: 'BIGINT',
  DOUBLE: 'DOUBLE',
  BOOLEAN: 'BOOLEAN',
  STRING: 'STRING',
  DATE: 'DATE',
};

export const unquote = (t: IToken): string =>
  t.tokenType === QuotedIdentifier ? t.image.slice(1, -1).replaceAll('``', '`') : t.image;
export const stringValue = (t: IToken): string => t.image.slice(1, -1).replaceAll("''", "'");

export class SqlExpressionParser extends EmbeddedActionsParser {
  constructor() {
    super(ALL_TOKENS, { maxLookahead: 4 });
  }

  protected orderByClause = this.RULE('orderByClause', (): OrderItem[] => {
    const items: OrderItem[] = [];
    this.OPTION(() => {
      this.CONSUME(K.ORDER);
      this.CONSUME(K.BY);
      this.AT_LEAST_ONE_SEP({ SEP: P.Comma, DEF: () => items.push(this.SUBRULE(this.orderItem)) });
    });
    return items;
  });

  protected orderItem = this.RULE('orderItem', (): OrderItem => {
    const expr = this.SUBRULE(this.expr);
    const descending = this.OR([
      { ALT: () => (this.CONSUME(K.DESC), true) },
      { ALT: () => (this.CONSUME(K.ASC), false) },
      { ALT: () => false },
    ]);
    return { expr, descending };
  });

  // --- expressions ---

  expr = this.RULE('expr', (): Expr => this.SUBRULE(this.orExpr));

  protected orExpr = this.RULE('orExpr', (): Expr => {
    let left = this.SUBRULE(this.andExpr);
    this.MANY(() => {
      const at = this.CONSUME(K.OR).startOffset;
      left = { kind: 'binary', op: 'OR', left, right: this.SUBRULE2(this.andExpr), at };
    });
    return left;
  });

  protected andExpr = this.RULE('andExpr', (): Expr => {
    let left = this.SUBRULE(this.notExpr);
    this.MANY(() => {
      const at = this.CONSUME(K.AND).startOffset;
      left = { kind: 'binary', op: 'AND', left, right: this.SUBRULE2(this.notExpr), at };
    });
    return left;
  });

  protected notExpr = this.RULE('notExpr', (): Expr =>
    this.OR([
      {
        ALT: (): Expr => ({
          kind: 'unary',
          op: 'NOT',
          at: this.CONSUME(K.NOT).startOffset,
          operand: this.SUBRULE(this.notExpr),
        }),
      },
      { ALT: () => this.SUBRULE(this.predicate) },
    ]),
  );

  protected predicate = this.RULE('predicate', (): Expr => {
    const left = this.SUBRULE(this.additive);
    const at = this.LA(1).startOffset;
    const rest = this.OPTION(() =>
      this.OR([
        {
          ALT: (): Expr => ({
            kind: 'binary',
            op: this.SUBRULE(this.comparison),
            left,
            right: this.SUBRULE2(this.additive),
            at,
          }),
        },
        {
          ALT: (): Expr => {
            this.CONSUME(K.IS);
            const negated = this.OPTION2(() => this.CONSUME(K.NOT)) !== undefined;
            this.CONSUME(K.NULL);
            return { kind: 'isNull', operand: left, negated, at };
          },
        },
        {
          ALT: (): Expr => {
            const negated = this.OPTION3(() => this.CONSUME2(K.NOT)) !== undefined;
            return this.OR2([
              {
                ALT: (): Expr => {
                  this.CONSUME(K.BETWEEN);
                  const low = this.SUBRULE3(this.additive);
                  this.CONSUME(K.AND);
                  return { kind: 'between', operand: left, low, high: this.SUBRULE4(this.additive), negated, at };
                },
              },
              {
                ALT: (): Expr => {
                  this.CONSUME(K.IN);
                  this.CONSUME(P.LParen);
                  const list: Expr[] = [];
                  this.AT_LEAST_ONE_SEP({ SEP: P.Comma, DEF: () => list.push(this.SUBRULE(this.expr)) });
                  this.CONSUME(P.RParen);
                  return { kind: 'in', operand: left, list, negated, at };
                },
              },
              {
                ALT: (): Expr => (
                  this.CONSUME(K.LIKE),
                  { kind: 'like', operand: left, pattern: this.SUBRULE5(this.additive), negated, at }
                ),
              },
            ]);
          },
        },
      ]),
    );
    return rest ?? left;
  });

  protected comparison = this.RULE('comparison', (): BinaryOp =>
    this.OR([
      { ALT: () => (this.CONSUME(P.Eq), '=' as const) },
      { ALT: () => (this.CONSUME(P.NotEq), '<>' as const) },
      { ALT: () => (this.CONSUME(P.LtEq), '<=' as const) },
      { ALT: () => (this.CONSUME(P.GtEq), '>=' as const) },
      { ALT: () => (this.CONSUME(P.Lt), '<' as const) },
      { ALT: () => (this.CONSUME(P.Gt), '>' as const) },
    ]),
  );

  protected additive = this.RULE('additive', (): Expr => {
    let left = this.SUBRULE(this.multiplicative);
    this.MANY(() => {
      const t = this.OR([
        { ALT: () => this.CONSUME(P.Plus) },
        { ALT: () => this.CONSUME(P.Minus) },
        { ALT: () => this.CONSUME(P.Concat) },
      ]);
      left = {
        kind: 'binary',
        op: t.image as BinaryOp,
        left,
        right: this.SUBRULE2(this.multiplicative),
        at: t.startOffset,
      };
    });
    return left;
  });

  protected multiplicative = this.RULE('multiplicative', (): Expr => {
    let left = this.SUBRULE(this.unary);
    this.MANY(() => {
      const t = this.OR([
        { ALT: () => this.CONSUME(P.Star) },
        { ALT: () => this.CONSUME(P.Slash) },
        { ALT: () => this.CONSUME(P.Percent) },
      ]);
      left = { kind: 'binary', op: t.image as BinaryOp, left, right: this.SUBRULE2(this.unary), at: t.startOffset };
    });
    return left;
  });

  protected unary = this.RULE('unary', (): Expr =>
    this.OR([
      {
        ALT: (): Expr => ({
          kind: 'unary',
          op: '-',
          at: this.CONSUME(P.Minus).startOffset,
          operand: this.SUBRULE(this.unary),
        }),
      },
      {
        ALT: (): Expr => ({
          kind: 'unary',
          op: '+',
          at: this.CONSUME(P.Plus).startOffset,
          operand: this.SUBRULE2(this.unary),
        }),
      },
      { ALT: () => this.SUBRULE(this.postfix) },
    ]),
  );

  /** `a[i]`, `m['k']`: an element of an array (from 1) or a map's value, as the call ITEM(a, i). */
  protected postfix = this.RULE('postfix', (): Expr => {
    let e = this.SUBRULE(this.primary);
    this.MANY(() => {
      const at = this.CONSUME(P.LBracket).startOffset;
      const index = this.SUBRULE(this.expr);
      this.CONSUME(P.RBracket);
      e = { kind: 'call', name: 'ITEM', args: [e, index], distinct: false, at };
    });
    return e;
  });

  protected primary = this.RULE('primary', (): Expr =>
    this.OR([
      {
        ALT: (): Expr => {
          const t = this.CONSUME(NumberLiteral);
          return { kind: 'number', text: t.image, at: t.startOffset };
        },
      },
      {
        ALT: (): Expr => {
          const t = this.CONSUME(StringLiteral);
          return { kind: 'string', value: stringValue(t), at: t.startOffset };
        },
      },
      { ALT: (): Expr => ({ kind: 'boolean', value: true, at: this.CONSUME(K.TRUE).startOffset }) },
      { ALT: (): Expr => ({ kind: 'boolean', value: false, at: this.CONSUME(K.FALSE).startOffset }) },
      { ALT: (): Expr => ({ kind: 'null', at: this.CONSUME(K.NULL).startOffset }) },
      { ALT: (): Expr => ({ kind: 'star', at: this.CONSUME(P.Star).startOffset }) },
      { ALT: () => this.SUBRULE(this.interval) },
      {
        GATE: () => this.LA(2).tokenType === StringLiteral,
        ALT: (): Expr => ({
          kind: 'timestamp',
          at: this.CONSUME(K.TIMESTAMP).startOffset,
          value: stringValue(this.CONSUME2(StringLiteral)),
        }),
      },
      { ALT: () => this.SUBRULE(this.cast) },
      { ALT: () => this.SUBRULE(this.caseExpr) },
      {
        ALT: (): Expr => {
          this.CONSUME(P.LParen);
          const e = this.SUBRULE(this.expr);
          this.CONSUME(P.RParen);
          return e;
        },
      },
      { ALT: () => this.SUBRULE(this.nameOrCall) },
    ]),
  );

  protected interval = this.RULE('interval', (): Expr => {
    const at = this.CONSUME(K.INTERVAL).startOffset;
    const value = stringValue(this.CONSUME(StringLiteral));
    const unitToken = this.CONSUME(Identifier);
    const unit = this.ACTION(() => unitToken.image.toUpperCase().replace(/S$/, '')) as IntervalUnit;
    this.ACTION(() => {
      if (!INTERVAL_UNITS.has(unit))
        throw new SqlError(
          `unknown interval unit '${unitToken.image}'; use SECOND, MINUTE, HOUR, DAY, MONTH or YEAR`,
          unitToken.startOffset,
        );
    });
    return { kind: 'interval', value, unit, at };
  });

  protected cast = this.RULE('cast', (): Expr => {
    const at = this.CONSUME(K.CAST).startOffset;
    this.CONSUME(P.LParen);
    const operand = this.SUBRULE(this.expr);
    this.CONSUME(K.AS);
    const type = this.SUBRULE(this.dataType);
    this.CONSUME(P.RParen);
    return { kind: 'cast', operand, type, at };
  });

  protected caseExpr = this.RULE('caseExpr', (): Expr => {
    const at = this.CONSUME(K.CASE).startOffset;
    const operand = this.OPTION(() => this.SUBRULE(this.expr));
    const whens: { when: Expr; then: Expr }[] = [];
    this.AT_LEAST_ONE(() => {
      this.CONSUME(K.WHEN);
      const when = this.SUBRULE2(this.expr);
      this.CONSUME(K.THEN);
      whens.push({ when, then: this.SUBRULE3(this.expr) });
    });
    const otherwise = this.OPTION2(() => (this.CONSUME(K.ELSE), this.SUBRULE4(this.expr)));
    this.CONSUME(K.END);
    return { kind: 'case', ...(operand ? { operand } : {}), whens, ...(otherwise ? { otherwise } : {}), at };
  });

  protected nameOrCall = this.RULE('nameOrCall', (): Expr => {
    const at = this.LA(1).startOffset;
    const parts = [this.SUBRULE(this.ident)];
    let star = false;
    this.MANY(() => {
      this.CONSUME(P.Dot);
      this.OR([
        { ALT: () => parts.push(this.SUBRULE2(this.ident)) },
        { ALT: () => ((star = true), this.CONSUME(P.Star)) },
      ]);
    });
    // No early return on `star`: the grammar recording runs every alternative, and must see the whole rule.
    const call = this.OPTION(() => {
      this.CONSUME(P.LParen);
      const distinct = this.OPTION2(() => this.CONSUME(K.DISTINCT)) !== undefined;
      const args: Expr[] = [];
      this.MANY_SEP({ SEP: P.Comma, DEF: () => args.push(this.SUBRULE(this.expr)) });
      this.CONSUME(P.RParen);
      const over = this.OPTION3(() => (this.CONSUME(K.OVER), this.SUBRULE(this.windowSpec)));
      return { distinct, args, over };
    });
    if (star) return { kind: 'star', table: parts.join('.'), at };
    if (call)
      return {
        kind: 'call',
        name: parts.join('.').toUpperCase(),
        args: call.args,
        distinct: call.distinct,
        ...(call.over ? { over: call.over } : {}),
        at,
      };
    return { kind: 'column', name: { kind: 'name', parts, at }, at };
  });

  protected windowSpec = this.RULE('windowSpec', (): WindowSpec => {
    this.CONSUME(P.LParen);
    const partitionBy: Expr[] = [];
    this.OPTION(() => {
      this.CONSUME(K.PARTITION);
      this.CONSUME(K.BY);
      this.AT_LEAST_ONE_SEP({ SEP: P.Comma, DEF: () => partitionBy.push(this.SUBRULE(this.expr)) });
    });
    const orderBy = this.SUBRULE(this.orderByClause);
    const frame = this.OPTION2(() => {
      const unit = this.OR([
        { ALT: () => (this.CONSUME(K.ROWS), 'ROWS' as const) },
        { ALT: () => (this.CONSUME(K.RANGE), 'RANGE' as const) },
      ]);
      return this.OR2([
        {
          ALT: () => {
            this.CONSUME(K.BETWEEN);
            const start = this.SUBRULE(this.frameBound);
            this.CONSUME(K.AND);
            return { unit, start, end: this.SUBRULE2(this.frameBound) };
          },
        },
        { ALT: () => ({ unit, start: this.SUBRULE3(this.frameBound) }) },
      ]);
    });
    this.CONSUME(P.RParen);
    return { partitionBy, orderBy, ...(frame ? { frame } : {}) };
  });

  // UNBOUNDED and CURRENT may name columns too: the keyword readings come first and win.
  protected frameBound = this.RULE('frameBound', (): FrameBound =>
    this.OR({
      IGNORE_AMBIGUITIES: true,
      DEF: [
        {
          ALT: (): FrameBound => (this.CONSUME(K.UNBOUNDED), this.CONSUME(K.PRECEDING), { kind: 'unboundedPreceding' }),
        },
        { ALT: (): FrameBound => (this.CONSUME(K.CURRENT), this.CONSUME(K.ROW), { kind: 'currentRow' }) },
        {
          ALT: (): FrameBound => {
            const offset = this.SUBRULE(this.additive);
            return this.OR2([
              { ALT: (): FrameBound => (this.CONSUME2(K.PRECEDING), { kind: 'preceding', offset }) },
              { ALT: (): FrameBound => (this.CONSUME(K.FOLLOWING), { kind: 'following', offset }) },
            ]);
          },
        },
      ],
    }),
  );

  dataType = this.RULE('dataType', (): DataType =>
    this.OR([
      { ALT: (): DataType => this.SUBRULE(this.timestampType) },
      { ALT: (): DataType => this.SUBRULE(this.rowType) },
      { ALT: (): DataType => this.SUBRULE(this.namedType) },
    ]),
  );

  protected timestampType = this.RULE('timestampType', (): DataType => {
    const t = this.OR([{ ALT: () => this.CONSUME(K.TIMESTAMP) }, { ALT: () => this.CONSUME(K.TIMESTAMP_LTZ) }]);
    let precision: number | undefined;
    this.OPTION(() => {
      this.CONSUME(P.LParen);
      precision = Number(this.CONSUME(NumberLiteral).image);
      this.CONSUME(P.RParen);
    });
    return {
      kind: 'type',
      name: t.tokenType === K.TIMESTAMP_LTZ ? 'TIMESTAMP_LTZ' : 'TIMESTAMP',
      ...(precision !== undefined ? { precision } : {}),
      at: t.startOffset,
    };
  });

  protected rowType = this.RULE('rowType', (): DataType => {
    const at = this.CONSUME(K.ROW).startOffset;
    this.CONSUME(P.Lt);
    const fields: { name: string; type: DataType }[] = [];
    this.AT_LEAST_ONE_SEP({
      SEP: P.Comma,
      DEF: () => fields.push({ name: this.SUBRULE(this.ident), type: this.SUBRULE(this.dataType) }),
    });
    this.CONSUME(P.Gt);
    return { kind: 'type', name: 'ROW', fields, at };
  });

  protected namedType = this.RULE('namedType', (): DataType => {
    const t = this.CONSUME(Identifier);
    const name = t.image.toUpperCase();
    const args: DataType[] = [];
    const numbers: number[] = [];
    this.OPTION(() => {
      this.CONSUME(P.LParen);
      this.AT_LEAST_ONE_SEP({ SEP: P.Comma, DEF: () => numbers.push(Number(this.CONSUME(NumberLiteral).image)) });
      this.CONSUME(P.RParen);
    });
    this.OPTION2(() => {
      this.CONSUME(P.Lt);
      this.AT_LEAST_ONE_SEP2({ SEP: P.Comma, DEF: () => args.push(this.SUBRULE(this.dataType)) });
      this.CONSUME(P.Gt);
    });
    return this.ACTION(() => namedType(t, name, numbers, args)) as DataType;
  });

  // --- names ---

  name = this.RULE('name', (): Name => {
    const at = this.LA(1).startOffset;
    const parts = [this.SUBRULE(this.ident)];
    this.MANY(() => (this.CONSUME(P.Dot), parts.push(this.SUBRULE2(this.ident))));
    return { kind: 'name', parts, at };
  });

  ident = this.RULE('ident', (): string => {
    const t = this.OR([
      { ALT: () => this.CONSUME(Identifier) },
      { ALT: () => this.CONSUME(QuotedIdentifier) },
      { ALT: () => this.CONSUME(NonReservedKeyword) },
    ]);
    return unquote(t);
  });
}

function namedType(t: IToken, name: string, numbers: number[], args: DataType[]): DataType {
  const at = t.startOffset;
  if (SIMPLE_TYPES[name] && numbers.length === 0 && args.length === 0)
    return { kind: 'type', name: SIMPLE_TYPES[name], at };
  if (name === 'VARCHAR' || name === 'CHAR')
    return numbers.length === 1
      ? { kind: 'type', name: 'VARCHAR', length: numbers[0]!, at }
      : { kind: 'type', name: 'VARCHAR', at };
  if (name === 'DECIMAL' && numbers.length <= 2)
    return {
      kind: 'type',
      name: 'DECIMAL',
      ...(numbers[0] !== undefined ? { precision: numbers[0] } : {}),
      ...(numbers[1] !== undefined ? { scale: numbers[1] } : {}),
      at,
    };
  if (name === 'ARRAY' && args.length === 1) return { kind: 'type', name: 'ARRAY', element: args[0]!, at };
  if (name === 'MAP' && args.length === 2) return { kind: 'type', name: 'MAP', key: args[0]!, value: args[1]!, at };
  throw new SqlError(
    `unknown type '${t.image}'${numbers.length || args.length ? ' with these arguments' : ''}; use INT, BIGINT, DOUBLE, DECIMAL(p, s), VARCHAR(n), STRING, BOOLEAN, DATE, TIMESTAMP(3), TIMESTAMP_LTZ(3), ARRAY<t>, MAP<k, v> or ROW<name t, ...>`,
    at,
  );
}
