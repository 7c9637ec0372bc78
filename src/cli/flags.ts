/** Flag parsing shared by the commands: numbers and key=value through the parsers the HTTP API uses too, renamed flags, TLS flag checks. */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { keyValue, wholeNumber, type ValueParser } from '../util/index.js';
import { tlsFlagProblems, type TlsFlags, type TlsRole } from './tls-flags.js';

/** A flag's value through the parser the HTTP submit's query uses too (client/submit-settings.ts), refused as commander refuses. */
export function flagValue<T>(parse: ValueParser<T>): (v: string) => T {
  return (v) => {
    try {
      return parse(v);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

export const intArg = (min: number): ((v: string) => number) => flagValue(wholeNumber(min));

export const positiveInt = intArg(1);

/** `--operator <uid>=<n>`, repeatable: each adds one operator's parallelism. */
export function operatorTarget(value: string, previous: Record<string, number> | undefined): Record<string, number> {
  const m = /^([^=]+)=(\d+)$/.exec(value);
  if (!m || Number(m[2]) < 1)
    throw new InvalidArgumentError(`expected <uid>=<parallelism>, the parallelism a whole number >= 1, got '${value}'`);
  return { ...previous, [m[1]!]: Number(m[2]) };
}

export const nonNegativeInt = intArg(0);

export function collectParam(v: string, acc: Record<string, string>): Record<string, string> {
  const [key, value] = flagValue(keyValue)(v);
  return { ...acc, [key]: value };
}

export const slotSharingOption = (prefix = ''): Option =>
  new Option(
    '--slot-sharing <mode>',
    `${prefix}on: a slot holds one subtask of each task of a slot sharing group (parallelism p needs p slots a group, as in Flink); off: one slot per subtask`,
  )
    .choices(['on', 'off'])
    .default('on');

/**
 * An old spelling of a renamed flag: accepted, hidden from help, and refused beside the new one.
 * `renamed` reads whichever was given.
 */
export function renamedFlag(flags: string, newAttribute: string, parse: (v: string) => number): Option {
  return new Option(flags).hideHelp().argParser(parse).conflicts(newAttribute);
}

export function renamed<T extends object>(
  o: T,
  newAttribute: keyof T & string,
  oldAttribute: keyof T & string,
): number {
  return (o[oldAttribute] ?? o[newAttribute]) as number;
}

/** Refuse an incoherent set of TLS flags: one line each, exit 2. */
export function checkTlsFlags(cmd: Command, o: TlsFlags, role: TlsRole): void {
  const problems = tlsFlagProblems(o, role);
  if (problems.length > 0) cmd.error(problems.map((p) => `error: ${p}`).join('\n'));
}
