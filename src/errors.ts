/**
 * The error catalogue. Every error the engine raises on purpose is a `ClinkError` with a stable `code`
 * listed here and in docs/errors.md (a test keeps the two in step).
 */
const BRAND = Symbol.for('clink.error');

export const ERROR_CODES = {
  CLINK_ERR_INVALID_ARGUMENT: 'an SDK call was given a value it cannot use',
  CLINK_ERR_PLAN: 'the job graph is malformed (names the operator)',
  CLINK_ERR_JOB_LOAD: 'a job module could not be found, compiled or imported',
  CLINK_ERR_JOB_DEFINITION: 'a job module does not export a valid defineJob(...) or its build function threw',
  CLINK_ERR_USER_CODE: 'user code inside an operator threw; the cause carries the original stack',
  CLINK_ERR_CONNECTOR: 'a connector was misconfigured or failed doing I/O',
  CLINK_ERR_STATE: 'keyed state or timers were used where there is no key',
  CLINK_ERR_CANCELLED: 'the job was cancelled before it finished',
  CLINK_ERR_MALFORMED_FRAME: 'a frame from a peer does not decode; the peer loses its connection',
  CLINK_ERR_FRAME_TOO_LARGE: 'a frame header claims more bytes than the cap; refused before any allocation',
  CLINK_ERR_FRAME_TIMEOUT: 'a peer did not deliver a frame within the read deadline',
  CLINK_ERR_PROTOCOL_VERSION: 'two peers speak protocol versions outside each other’s range',
  CLINK_ERR_REGISTRATION_REFUSED: 'the coordinator refused a worker registration',
  CLINK_ERR_NOT_ENOUGH_SLOTS: 'a job needs more free slots than the cluster has',
  CLINK_ERR_NOT_FOUND: 'no job (or worker) with that id',
  CLINK_ERR_WORKER_LOST: 'a worker running part of the job was lost',
  CLINK_ERR_JOB_FAILED: 'a job submitted to a cluster failed; the message carries the cause',
  CLINK_ERR_PEER_LOST: 'a data-plane connection to another worker failed or closed early',
  CLINK_ERR_SDK_MISMATCH: 'a job module was built against an SDK surface this node does not have',
  CLINK_ERR_MODULE_MISSING: 'a reference to a job module that the receiver does not hold',
  CLINK_ERR_STORAGE: 'a file could not be written durably (a short write, a full or read-only disk); names the file',
  CLINK_ERR_BUSY: 'the coordinator turned a connection away for now (its admission or client-session cap); retry',
  CLINK_ERR_WRONG_PROTOCOL:
    'a peer spoke another protocol (HTTP, TLS) on a clink port, or a clink port was pointed at one that does',
  CLINK_ERR_ENVIRONMENT:
    'the machine refused what a flag asked for (a port in use, an address not here); names the flag to change',
  CLINK_ERR_INTERRUPTED: 'the command was interrupted (Ctrl-C or SIGTERM)',
  CLINK_ERR_UNAUTHORIZED: 'a request or connection without the cluster token (CLINK_AUTH_TOKEN), or with a wrong one',
  CLINK_ERR_FENCED: 'a superseded leader tried to write metadata a newer leader owns (its epoch is lower)',
  CLINK_ERR_UNAVAILABLE: 'an HTTP route this node cannot answer now (a standby coordinator, a worker between sessions)',
  CLINK_ERR_INTERNAL: 'an HTTP route failed in a way no other code covers (a bug)',
  CLINK_ERR_MESH:
    "a mesh run's members could not come together (a differing job, an address taken, a member that never came, a leader gone), or its run failed (a member lost, a subtask failed)",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ClinkError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** Job bundles may carry their own copy of the SDK, so `instanceof` checks a brand, not a prototype. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== 'object' || value === null || (value as Record<symbol, unknown>)[BRAND] !== true) return false;
    if (this === ClinkError) return true;
    return (value as Error).name === this.name;
  }
}

export class InvalidArgumentError extends ClinkError {
  constructor(message: string) {
    super('CLINK_ERR_INVALID_ARGUMENT', message);
  }
}

export class PlanError extends ClinkError {
  constructor(message: string) {
    super('CLINK_ERR_PLAN', message);
  }
}

export class JobLoadError extends ClinkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CLINK_ERR_JOB_LOAD', message, options);
  }
}

export class JobDefinitionError extends ClinkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CLINK_ERR_JOB_DEFINITION', message, options);
  }
}

export class ConnectorError extends ClinkError {
  /**
   * The external system was unreachable or busy (a refused connection, a broker or database restarting):
   * a restart may succeed, so the failure is not fatal even while the subtask starts.
   */
  readonly transient: boolean;
  constructor(message: string, options?: { cause?: unknown; transient?: boolean }) {
    super('CLINK_ERR_CONNECTOR', message, options);
    this.transient = options?.transient ?? false;
  }
}

export class StateError extends ClinkError {
  constructor(message: string, options?: ErrorOptions) {
    super('CLINK_ERR_STATE', message, options);
  }
}

/** A file could not be written durably: `written` of `total` bytes reached it before the failure. */
export class StorageError extends ClinkError {
  constructor(
    message: string,
    readonly path: string,
    readonly written: number,
    readonly total: number,
    options?: { cause?: unknown },
  ) {
    super('CLINK_ERR_STORAGE', message, options);
  }
}

/** The machine refused what a setting asked for: the message names the flag to change. */
export class EnvironmentError extends ClinkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CLINK_ERR_ENVIRONMENT', message, options);
  }
}

/**
 * A socket could not listen: which address, which flag chose it, and what to do. Other errors pass
 * through unchanged.
 */
export function listenError(err: unknown, host: string, port: number, flags: { port: string; host: string }): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE')
    return new EnvironmentError(
      `cannot listen on ${where}: the port is in use (${flags.port}); stop what holds it or choose another port (0 picks a free one)`,
      { cause: err },
    );
  if (code === 'EACCES')
    return new EnvironmentError(
      `cannot listen on ${where}: permission denied (${flags.port}); choose a port above 1023`,
      { cause: err },
    );
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new EnvironmentError(
      `cannot listen on ${where}: ${host} is not an address of this machine (${flags.host}); choose one it has, such as 127.0.0.1 or 0.0.0.0`,
      { cause: err },
    );
  return err;
}

export class JobCancelledError extends ClinkError {
  constructor(message = 'job cancelled') {
    super('CLINK_ERR_CANCELLED', message);
  }
}

/** A data-plane connection to another worker failed: usually the consequence of that worker's loss. */
export class PeerLostError extends ClinkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CLINK_ERR_PEER_LOST', message, options);
  }
}

/** User code threw inside an operator. `cause` is the original error with its own stack. */
export class UserCodeError extends ClinkError {
  readonly operatorId: string;
  readonly operatorName: string;
  readonly subtaskIndex: number;
  constructor(
    operator: { id: string; name: string; type: string },
    subtaskIndex: number,
    parallelism: number,
    cause: unknown,
  ) {
    const what = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(
      'CLINK_ERR_USER_CODE',
      `operator '${operator.name}' (${operator.type}, subtask ${subtaskIndex + 1}/${parallelism}) failed: ${what}`,
      { cause },
    );
    this.operatorId = operator.id;
    this.operatorName = operator.name;
    this.subtaskIndex = subtaskIndex;
  }
}

const FATAL = Symbol.for('clink.fatal');

/**
 * Mark `err` as deterministic: it happened while a subtask started (its connectors validated, its
 * operators built and opened, its state restored), so running the subtask again would fail the same
 * way. The job fails with it instead of restarting. Returns `err`.
 */
export function markFatal<T>(err: T): T {
  if (err instanceof ConnectorError && err.transient) return err;
  if (typeof err === 'object' && err !== null) Object.defineProperty(err, FATAL, { value: true });
  return err;
}

export function isFatal(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[FATAL] === true;
}
