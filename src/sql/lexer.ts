/**
 * The SQL lexer (Chevrotain, design record 015): keywords are case-insensitive and reserved only where
 * the grammar needs them (a keyword that is not reserved may still name a column: see NON_RESERVED);
 * identifiers are bare or back-quoted (`my col`), strings single-quoted with '' for a quote.
 */
import { createToken, Lexer, type TokenType } from 'chevrotain';

export const Identifier = createToken({ name: 'Identifier', pattern: /[A-Za-z_][A-Za-z0-9_$]*/ });
export const QuotedIdentifier = createToken({ name: 'QuotedIdentifier', pattern: /`(?:[^`]|``)+`/ });

/**
 * Keywords that may also name a column or table (Flink lets `key`, `value`, `timestamp` name columns):
 * the parser's identifier rule accepts this category beside plain identifiers.
 */
export const NonReservedKeyword = createToken({ name: 'NonReservedKeyword', pattern: Lexer.NA });
const NON_RESERVED = new Set([
  'KEY',
  'TIMESTAMP',
  'ROWS',
  'RANGE',
  'CURRENT',
  'ROW',
  'TABLES',
  'STATEMENT',
  'SET',
  'RESET',
  'WATERMARK',
  'ENFORCED',
  'DESCRIPTOR',
  'TEMPORARY',
  'VIEW',
  'PARTITION',
  'FOLLOWING',
  'PRECEDING',
  'UNBOUNDED',
  'BEGIN',
  'TIMESTAMP_LTZ',
]);

const keywords = new Map<string, TokenType>();
/** A keyword token, matched case-insensitively and only as a whole word. */
function kw(word: string): TokenType {
  const t = createToken({
    name: word,
    pattern: new RegExp(`${word}(?![A-Za-z0-9_$])`, 'i'),
    categories: NON_RESERVED.has(word) ? [NonReservedKeyword] : [],
  });
  keywords.set(word, t);
  return t;
}

export const K = {
  SELECT: kw('SELECT'),
  DISTINCT: kw('DISTINCT'),
  FROM: kw('FROM'),
  WHERE: kw('WHERE'),
  GROUP: kw('GROUP'),
  BY: kw('BY'),
  HAVING: kw('HAVING'),
  ORDER: kw('ORDER'),
  LIMIT: kw('LIMIT'),
  ASC: kw('ASC'),
  DESC: kw('DESC'),
  AS: kw('AS'),
  AND: kw('AND'),
  OR: kw('OR'),
  NOT: kw('NOT'),
  IS: kw('IS'),
  NULL: kw('NULL'),
  TRUE: kw('TRUE'),
  FALSE: kw('FALSE'),
  BETWEEN: kw('BETWEEN'),
  IN: kw('IN'),
  LIKE: kw('LIKE'),
  CASE: kw('CASE'),
  WHEN: kw('WHEN'),
  THEN: kw('THEN'),
  ELSE: kw('ELSE'),
  END: kw('END'),
  CAST: kw('CAST'),
  INTERVAL: kw('INTERVAL'),
  TIMESTAMP_LTZ: kw('TIMESTAMP_LTZ'),
  TIMESTAMP: kw('TIMESTAMP'),
  JOIN: kw('JOIN'),
  INNER: kw('INNER'),
  LEFT: kw('LEFT'),
  RIGHT: kw('RIGHT'),
  FULL: kw('FULL'),
  OUTER: kw('OUTER'),
  CROSS: kw('CROSS'),
  ON: kw('ON'),
  UNION: kw('UNION'),
  ALL: kw('ALL'),
  OVER: kw('OVER'),
  PARTITION: kw('PARTITION'),
  ROWS: kw('ROWS'),
  RANGE: kw('RANGE'),
  UNBOUNDED: kw('UNBOUNDED'),
  PRECEDING: kw('PRECEDING'),
  FOLLOWING: kw('FOLLOWING'),
  CURRENT: kw('CURRENT'),
  ROW: kw('ROW'),
  TABLE: kw('TABLE'),
  DESCRIPTOR: kw('DESCRIPTOR'),
  CREATE: kw('CREATE'),
  TEMPORARY: kw('TEMPORARY'),
  VIEW: kw('VIEW'),
  IF: kw('IF'),
  EXISTS: kw('EXISTS'),
  DROP: kw('DROP'),
  ALTER: kw('ALTER'),
  RENAME: kw('RENAME'),
  TO: kw('TO'),
  SHOW: kw('SHOW'),
  TABLES: kw('TABLES'),
  DESCRIBE: kw('DESCRIBE'),
  EXPLAIN: kw('EXPLAIN'),
  INSERT: kw('INSERT'),
  INTO: kw('INTO'),
  EXECUTE: kw('EXECUTE'),
  STATEMENT: kw('STATEMENT'),
  SET: kw('SET'),
  RESET: kw('RESET'),
  BEGIN: kw('BEGIN'),
  WATERMARK: kw('WATERMARK'),
  FOR: kw('FOR'),
  PRIMARY: kw('PRIMARY'),
  KEY: kw('KEY'),
  ENFORCED: kw('ENFORCED'),
  WITH: kw('WITH'),
};

export const NumberLiteral = createToken({ name: 'NumberLiteral', pattern: /(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?/ });
export const StringLiteral = createToken({ name: 'StringLiteral', pattern: /'(?:[^']|'')*'/ });

const punct = (name: string, pattern: RegExp | string): TokenType => createToken({ name, pattern });
export const P = {
  LParen: punct('LParen', '('),
  RParen: punct('RParen', ')'),
  Comma: punct('Comma', ','),
  Dot: punct('Dot', '.'),
  Semicolon: punct('Semicolon', ';'),
  Star: punct('Star', '*'),
  Plus: punct('Plus', '+'),
  Minus: punct('Minus', '-'),
  Slash: punct('Slash', '/'),
  Percent: punct('Percent', '%'),
  Concat: punct('Concat', '||'),
  NotEq: punct('NotEq', /<>|!=/),
  LtEq: punct('LtEq', '<='),
  GtEq: punct('GtEq', '>='),
  Lt: punct('Lt', '<'),
  Gt: punct('Gt', '>'),
  Eq: punct('Eq', '='),
  Arrow: punct('Arrow', '=>'),
  LBracket: punct('LBracket', '['),
  RBracket: punct('RBracket', ']'),
};

const Whitespace = createToken({ name: 'Whitespace', pattern: /\s+/, group: Lexer.SKIPPED });
const LineComment = createToken({ name: 'LineComment', pattern: /--[^\n]*/, group: Lexer.SKIPPED });
const BlockComment = createToken({ name: 'BlockComment', pattern: /\/\*[\s\S]*?\*\//, group: Lexer.SKIPPED });

/** Every token, longest and most specific first (Chevrotain tries them in order). */
export const ALL_TOKENS: TokenType[] = [
  Whitespace,
  LineComment,
  BlockComment,
  NonReservedKeyword,
  ...keywords.values(),
  Identifier,
  QuotedIdentifier,
  NumberLiteral,
  StringLiteral,
  P.Arrow,
  P.LtEq,
  P.GtEq,
  P.NotEq,
  P.Concat,
  P.Lt,
  P.Gt,
  P.Eq,
  P.LParen,
  P.RParen,
  P.Comma,
  P.Dot,
  P.Semicolon,
  P.Star,
  P.Plus,
  P.Minus,
  P.Slash,
  P.Percent,
  P.LBracket,
  P.RBracket,
];

export const sqlLexer = new Lexer(ALL_TOKENS, { positionTracking: 'onlyOffset', ensureOptimizations: false });
