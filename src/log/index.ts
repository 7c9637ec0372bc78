/**
 * Logging: pino, one root per node, child loggers per component (`component`), errors under `err`.
 *
 * @example
 * const log = createLogger({ name: 'coordinator' }).child({ component: 'coordinator.watchdog' });
 * log.warn({ workerId }, `worker lost: ${workerId} (heartbeat timeout)`);
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger } from 'pino';

export type LogFormat = 'pretty' | 'json';

export interface LoggerOptions {
  name?: string;
  /** @default process.env.CLINK_LOG_LEVEL ?? 'info' */
  level?: string;
  /** @default process.env.CLINK_LOG_FORMAT, else pretty when standard error is a terminal, JSON otherwise */
  format?: LogFormat;
  /** Where lines go. @default standard error */
  destination?: DestinationStream;
}

/** The format `--log-format` (CLINK_LOG_FORMAT) asks for, else pretty on a terminal and JSON lines otherwise. */
export function logFormat(): LogFormat {
  const f = process.env.CLINK_LOG_FORMAT;
  return f === 'pretty' || f === 'json' ? f : process.stderr.isTTY ? 'pretty' : 'json';
}

/**
 * Log lines go to standard error, always: standard output is the job's (print(), results), so the two
 * never interleave within a line.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const usePretty = (options.format ?? logFormat()) === 'pretty';
  const destination =
    options.destination ??
    (usePretty
      ? pretty({
          destination: 2,
          colorize: process.stderr.isTTY === true,
          sync: true,
          translateTime: 'HH:MM:ss.l',
          ignore: 'pid,hostname',
        })
      : pino.destination({ dest: 2, sync: true }));
  return pino(
    { name: options.name ?? 'clink', level: options.level ?? process.env.CLINK_LOG_LEVEL ?? 'info' },
    destination,
  );
}

/** A logger that keeps its lines in memory, for tests that assert what was logged. */
export function memoryLogger(level = 'debug'): { log: Logger; lines: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = pino({ level }, { write: (s: string) => void lines.push(s) });
  return { log, lines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
