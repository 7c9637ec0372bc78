/**
 * ClusterClient: talks to a coordinator as a client: HelloClient, then requests.
 *
 * @example
 * const client = await ClusterClient.connect('127.0.0.1', 6123);
 * const { jobId } = await client.submit({ module, spec, params: {} });
 * const done = await client.waitForCompletion(jobId);
 */
import { ClinkError, ConnectorError, ERROR_CODES, type ErrorCode } from '../errors.js';
import { unknownConnectors } from '../connectors/index.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../config/index.js';
import {
  connectWithin,
  noAnswerError,
  FrameConnection,
  writeFrame,
  WrongProtocolError,
  wrongPortMessage,
  type TlsClientConfig,
} from '../net/index.js';
import {
  checkProtocolCompatibility,
  isTerminalJobState,
  decodeCollected,
  LOCAL_PROTOCOL,
  makeMessage,
  MessageKind,
  ProtocolVersionError,
  type Message,
  type MessageOf,
} from '../protocol/index.js';
import { localSdkManifest, type CompiledJob } from '../loader/index.js';
import type { JobGraphSpec } from '../plan/index.js';
import { authTokenFromEnv, setTimer } from '../util/index.js';

export interface SubmitOptions {
  module: CompiledJob;
  spec: JobGraphSpec;
  params: Record<string, string>;
  /** Defaults to the job's defineJob name. */
  name?: string;
  /** The parallelism given to the build function (0 = the spec's default). */
  buildParallelism?: number;
  /** Checkpointing and restore; unset fields keep their defaults (no checkpoints, no restore). */
  checkpoint?: Partial<CheckpointSettings>;
  /** Let the autoscaler rescale the job within these bounds (needs a checkpoint directory). */
  autoscale?: { min: number; max: number };
  /** Advertise another SDK than the module's own (tests of the gate). */
  sdkAdvert?: { fingerprint: string; manifest: Record<string, string> };
}

export interface JobOutcome {
  jobId: string;
  ok: boolean;
  state: string;
  error: string;
  durationMs: number;
  collected: Record<string, unknown[]>;
}

export type JobSummary = MessageOf<'ListJobsReply'>['jobs'][number];

export type CheckpointSettings = MessageOf<'SubmitJob'>['checkpoint'];

export const NO_CHECKPOINTS: Readonly<CheckpointSettings> = {
  checkpointDir: '',
  intervalMs: 0,
  restoreFromDir: '',
  restoreFromCheckpointId: 0,
  maxRestartsOnWorkerLoss: -1,
  alignment: 'aligned' as const,
  stateBackendUri: '',
  checkpointsRetained: 1,
  maxRestarts: -1,
  allowNonRestoredState: false,
  allowDuplicatesOnFallback: false,
  timeoutMs: 0,
  minPauseMs: 0,
  alignedTimeoutMs: 0,
  tolerableFailures: -1,
  stateBackendType: 'default',
};

/** The SubmitJob a submit sends: with the module's bytes, or its hash alone (the receiver may hold it). */
export function submitJobMessage(o: SubmitOptions, withBytes: boolean): MessageOf<'SubmitJob'> {
  return makeMessage('SubmitJob', {
    jobName: o.name ?? o.spec.job.name,
    specJson: JSON.stringify(o.spec),
    modules: [
      withBytes
        ? { sha256: o.module.sha256, bytes: o.module.code, sourceMap: o.module.sourceMap }
        : { sha256: o.module.sha256, bytes: new Uint8Array(0), sourceMap: new Uint8Array(0) },
    ],
    checkpoint: { ...NO_CHECKPOINTS, ...o.checkpoint },
    params: JSON.stringify(o.params),
    sdkFingerprint: o.sdkAdvert?.fingerprint ?? o.module.sdk.fingerprint,
    sdkManifest: JSON.stringify(o.sdkAdvert?.manifest ?? localSdkManifest()),
    sdkVersion: o.module.sdk.version,
    buildParallelism: o.buildParallelism ?? 0,
    autoscaleMin: o.autoscale?.min ?? 0,
    autoscaleMax: o.autoscale?.max ?? 0,
  });
}

export {
  checkpointSettingsOfSets,
  FLINK_SETTING_KEYS,
  parseSetting,
  settingsOf,
  SUBMIT_PARAMETERS,
  submitSettingsFromQuery,
  type SubmitParameter,
  type SubmitSettings,
} from './submit-settings.js';

export class ClusterClient {
  private readonly waiting: { type: Message['type']; resolve: (m: Message) => void; reject: (e: Error) => void }[] = [];
  private readonly completions = new Map<string, JobOutcome>();
  private readonly completionWaiters = new Map<string, ((o: JobOutcome) => void)[]>();
  /** Jobs submitted on this connection: the coordinator reports their end here (JobCompleted). */
  private readonly submittedHere = new Set<string>();
  private closedError: Error | undefined;

  private constructor(private readonly conn: FrameConnection) {}

  /**
   * `authToken`: the cluster's token, presented in HelloClient (@default CLINK_AUTH_TOKEN from the
   * environment); `tls`: connect over TLS, verifying the coordinator; `timeoutMs` bounds TCP connect and
   * handshake together (@default 5,000).
   */
  static async connect(
    host: string,
    port: number,
    options: { name?: string; timeoutMs?: number; authToken?: string; tls?: TlsClientConfig } = {},
  ): Promise<ClusterClient> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    const socket = await connectWithin(
      host,
      port,
      'the coordinator',
      timeoutMs,
      options.tls,
      '; is one running there? (clink node --role=coordinator; --coordinator or CLINK_COORDINATOR point elsewhere)',
    );
    // The coordinator may answer before it reads a byte (a refusal at its admission cap): read from the start.
    const conn = new FrameConnection(socket, { role: 'client' });
    const client = new ClusterClient(conn);
    conn.start({ onMessage: (m) => client.onMessage(m) });
    void conn.closed.then((c) =>
      client.onClosed(
        !client.answered && !(c.error instanceof WrongProtocolError)
          ? noAnswerError('the coordinator', host, port, options.tls !== undefined, c.error)
          : c.error
            ? lostCoordinator(host, port, c.error)
            : new ClinkError('CLINK_ERR_CONNECTOR', `the coordinator at ${host}:${port} closed the connection`),
      ),
    );
    const hello = makeMessage('HelloClient', {
      clientName: options.name ?? `clink-cli-${process.pid}`,
      protocolVersion: LOCAL_PROTOCOL.version,
      minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
      authToken: options.authToken ?? authTokenFromEnv() ?? '',
    });
    await writeFrame(socket, hello, timeoutMs).catch((err: unknown) => {
      // A refusal read meanwhile says more than the broken pipe it caused.
      throw client.closedError ?? lostCoordinator(host, port, err as Error);
    });
    return client;
  }

  /** Whether the coordinator has sent anything on this connection. */
  private answered = false;

  private onMessage(m: Message): void {
    this.answered = true;
    if (m.type === 'JobCompleted') {
      const outcome: JobOutcome = {
        jobId: m.jobId,
        ok: m.ok,
        state: m.state,
        error: m.error,
        durationMs: m.durationMs,
        collected: m.collected.length > 0 ? decodeCollected(m.collected) : {},
      };
      this.completions.set(m.jobId, outcome);
      for (const w of this.completionWaiters.get(m.jobId) ?? []) w(outcome);
      this.completionWaiters.delete(m.jobId);
      return;
    }
    const i = this.waiting.findIndex((w) => w.type === m.type);
    if (i >= 0) {
      this.waiting.splice(i, 1)[0]!.resolve(m);
      return;
    }
    // Nobody asked: a refusal of the session itself. A connection turned away at the admission cap is
    // answered with a RegisterAck nack (the coordinator did not know it was a client), a refused
    // HelloClient with a SubmitJobAck nack.
    if ((m.type === 'RegisterAck' || m.type === 'SubmitJobAck') && !m.ok) {
      const busy = m.message.startsWith('coordinator busy');
      const code = busy
        ? 'CLINK_ERR_BUSY'
        : m.message.startsWith('authentication failed')
          ? 'CLINK_ERR_UNAUTHORIZED'
          : 'CLINK_ERR_REGISTRATION_REFUSED';
      this.onClosed(new ClinkError(code, busy ? m.message : `the coordinator refused this client: ${m.message}`));
      this.conn.close();
    }
  }

  private onClosed(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    for (const w of this.waiting.splice(0)) w.reject(err);
    for (const [, ws] of this.completionWaiters)
      for (const w of ws)
        w({
          jobId: '',
          ok: false,
          state: 'UNKNOWN',
          error: `lost the coordinator: ${err.message}`,
          durationMs: 0,
          collected: {},
        });
    this.completionWaiters.clear();
  }

  private request<T extends Message['type']>(
    m: Message,
    reply: T,
    timeoutMs = 10_000,
  ): Promise<Extract<Message, { type: T }>> {
    if (this.closedError) return Promise.reject(this.closedError);
    return new Promise((resolve, reject) => {
      const t = setTimer(
        () =>
          reject(new ClinkError('CLINK_ERR_FRAME_TIMEOUT', `no ${reply} from the coordinator within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiting.push({
        type: reply,
        resolve: (x) => (clearTimeout(t), resolve(x as Extract<Message, { type: T }>)),
        reject: (e) => (clearTimeout(t), reject(e)),
      });
      this.conn.send(m);
    });
  }

  /**
   * Submit a job. The module goes by reference first (its hash): a coordinator that holds it needs no
   * bytes. One that does not answers with the missing hashes, and they are uploaded in one retry on
   * this connection. A module built against an SDK the cluster does not have is refused before any
   * byte ships.
   */
  async submit(o: SubmitOptions): Promise<{ jobId: string; uploadedBytes: number }> {
    // Refused here, before a byte ships; the coordinator checks again (a client may be another build).
    const unknown = unknownConnectors(o.spec.operators);
    if (unknown.length > 0) throw new ConnectorError(unknown.join('; '));
    const send = (withBytes: ReadonlySet<string>) =>
      this.request(submitJobMessage(o, withBytes.has(o.module.sha256)), 'SubmitJobAck');
    let ack = await send(new Set());
    let uploadedBytes = 0;
    if (!ack.ok && ack.missingModuleHashes.length > 0) {
      uploadedBytes = o.module.code.length + o.module.sourceMap.length;
      ack = await send(new Set(ack.missingModuleHashes));
    }
    const compat = checkProtocolCompatibility(
      LOCAL_PROTOCOL,
      { version: ack.protocolVersion, minCompatible: ack.minCompatibleProtocolVersion },
      { local: 'this client', remote: 'the coordinator' },
    );
    if (!compat.ok) throw new ProtocolVersionError(compat.message);
    if (!ack.ok) {
      if (ack.message.startsWith('coordinator busy')) throw new ClinkError('CLINK_ERR_BUSY', ack.message);
      // A coordinator before SubmitJobAck.code says it only in words.
      const inferred = /slots/.test(ack.message)
        ? 'CLINK_ERR_NOT_ENOUGH_SLOTS'
        : /names connector|the job asks for/.test(ack.message)
          ? 'CLINK_ERR_CONNECTOR'
          : /incompatible SDK|SDK fingerprint/.test(ack.message)
            ? 'CLINK_ERR_SDK_MISMATCH'
            : 'CLINK_ERR_PLAN';
      const code = (ack.code in ERROR_CODES ? ack.code : inferred) as ErrorCode;
      throw new ClinkError(code, `submit refused: ${ack.message}`);
    }
    this.submittedHere.add(ack.jobId);
    return { jobId: ack.jobId, uploadedBytes };
  }

  /**
   * Resolves when the job ends. The end of a job submitted on this connection is reported on it, with
   * its collected results; another client's job is followed through ListJobs every `pollMs` (its
   * collected results go to the client that submitted it). A job the coordinator does not know (nor
   * among its last ended ones) is CLINK_ERR_NOT_FOUND; a lost connection resolves as state UNKNOWN.
   */
  waitForCompletion(jobId: string, o: { pollMs?: number } = {}): Promise<JobOutcome> {
    const done = this.completions.get(jobId);
    if (done) return Promise.resolve(done);
    if (this.closedError) return Promise.reject(this.closedError);
    if (!this.submittedHere.has(jobId)) return this.followListed(jobId, o.pollMs ?? 500);
    return new Promise((resolve) =>
      (this.completionWaiters.get(jobId) ?? this.completionWaiters.set(jobId, []).get(jobId)!).push(resolve),
    );
  }

  private async followListed(jobId: string, pollMs: number): Promise<JobOutcome> {
    for (;;) {
      let jobs: JobSummary[];
      try {
        jobs = await this.listJobs(true);
      } catch (err) {
        if (!this.closedError) throw err;
        return {
          jobId,
          ok: false,
          state: 'UNKNOWN',
          error: `lost the coordinator: ${this.closedError.message}`,
          durationMs: 0,
          collected: {},
        };
      }
      const job = jobs.find((j) => j.jobId === jobId);
      if (!job)
        throw new ClinkError(
          'CLINK_ERR_NOT_FOUND',
          `job ${jobId} is not known to the coordinator (it lists running jobs and its recently ended ones)`,
        );
      if (isTerminalJobState(job.state))
        return {
          jobId,
          ok: job.state === 'FINISHED',
          state: job.state,
          error: job.error,
          durationMs: Date.now() - job.startedAtMs,
          collected: {},
        };
      await new Promise((r) => setTimer(() => r(undefined), pollMs));
    }
  }

  async listJobs(includeCompleted = true): Promise<JobSummary[]> {
    return (await this.request(makeMessage('ListJobs', { includeCompleted }), 'ListJobsReply')).jobs;
  }

  async cancel(jobId: string): Promise<{ ok: boolean; message: string }> {
    const r = await this.request(makeMessage('CancelJob', { jobId, reason: 'cancelled by a client' }), 'ClientReply');
    if (r.requestKind !== MessageKind.CancelJob)
      throw new ClinkError(
        'CLINK_ERR_MALFORMED_FRAME',
        `expected a reply to CancelJob, got one to kind ${r.requestKind}`,
      );
    return { ok: r.ok, message: r.message };
  }

  /** Take a savepoint into `dir` (and with `cancel`, end the job once it is durable). */
  async savepoint(jobId: string, dir: string, cancel = false): Promise<{ ok: boolean; message: string; path: string }> {
    const r = await this.request(
      makeMessage('Savepoint', { jobId, targetDir: dir, cancelAfter: cancel }),
      'ClientReply',
      60_000,
    );
    return { ok: r.ok, message: r.message, path: r.savepointPath };
  }

  /**
   * Rescale a running job: to `parallelism` (0 keeps it) and `operators` at their own; `mode` 'hot' replaces
   * only the tasks that change, 'replan' drains and replans, 'auto' is hot when it can.
   * Resolves once it runs again, or refused; the wait covers a checkpoint, the drain and the redeploy.
   */
  async rescale(
    jobId: string,
    parallelism: number,
    operators: Record<string, number> = {},
    timeoutMs = 300_000,
    mode: 'auto' | 'hot' | 'replan' = 'auto',
  ): Promise<{ ok: boolean; message: string }> {
    const r = await this.request(
      makeMessage('RescaleJob', {
        jobId,
        parallelism,
        operators: Object.entries(operators).map(([operatorId, n]) => ({ operatorId, parallelism: n })),
        mode,
      }),
      'ClientReply',
      timeoutMs,
    );
    return { ok: r.ok, message: r.message };
  }

  close(): void {
    this.conn.close();
  }
}

/** A broken connection to the coordinator, as one line a user can act on. */
function lostCoordinator(host: string, port: number, err: Error): ClinkError {
  if (err instanceof WrongProtocolError)
    return new WrongProtocolError(err.protocol, wrongPortMessage(host, port, err.protocol, '--coordinator'));
  return new ClinkError(
    'CLINK_ERR_CONNECTOR',
    `lost the connection to the coordinator at ${host}:${port}: ${err.message}; is it running and reachable?`,
    { cause: err },
  );
}
