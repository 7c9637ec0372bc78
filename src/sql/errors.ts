/** A statement that does not parse or bind, or that the catalog refuses: the message, and where (a 1-based byte offset into the text). */
import { ClinkError } from '../errors.js';

/** Parentheses nested deeper than this are refused before parsing (the parser and planner recurse through each level). */
export const MAX_NESTING = 100;

export class SqlError extends ClinkError {
  /** 1-based byte offset of the offending token in the statement text (0 until the text is known). */
  readonly position: number;

  constructor(
    readonly detail: string,
    /** 0-based UTF-16 offset, as the lexer counts. */
    readonly offset: number,
    readonly text?: string,
  ) {
    const position = text === undefined ? 0 : Buffer.byteLength(text.slice(0, offset)) + 1;
    super('CLINK_ERR_PLAN', text === undefined ? detail : `${detail} (at byte ${position})`);
    this.position = position;
  }

  /** The same error, placed in `text`. */
  withText(text: string): SqlError {
    return this.text === undefined ? new SqlError(this.detail, this.offset, text) : this;
  }

  /** A statement nested past what the parser's and planner's recursion can hold. */
  static tooDeep(at: number, text: string): SqlError {
    return new SqlError(
      `the statement nests too deeply for the planner (over ${MAX_NESTING} levels of parentheses, or thousands of ANDs in one condition); split it, or use IN (...)`,
      at,
      text,
    );
  }

  /** The statement's line with a caret under the offending character, for a terminal. */
  excerpt(): string {
    if (this.text === undefined) return '';
    const lineStart = this.text.lastIndexOf('\n', this.offset - 1) + 1;
    const lineEnd = this.text.indexOf('\n', this.offset);
    const line = this.text.slice(lineStart, lineEnd === -1 ? undefined : lineEnd);
    return `${line}\n${' '.repeat(this.offset - lineStart)}^`;
  }
}
