/**
 * The client side of the control port: a HelloClient opens a bounded session (ClientSessions), and
 * each request of it (submit, list, cancel, savepoint) is answered in turn. A refused hello gets a
 * SubmitJobAck with the reason, so an old or busy client prints one line, not a broken pipe.
 */
import { ClinkError } from '../errors.js';
import { writeFrame, type FrameConnection } from '../net/index.js';
import {
  FrameDecodeError,
  LOCAL_PROTOCOL,
  makeMessage,
  MessageKind,
  type Message,
  type MessageOf,
} from '../protocol/index.js';
import { CLIENT_DISPATCH_BACKLOG_FRAMES, type ClientSession, type ClientSessions } from './client-sessions.js';
import type { JobState, JobView } from './job-state.js';
import { checkSubmitSdk } from './job-submission.js';
import { toSummary } from './job-views.js';
import type { RescaleModeRequest, RescaleOutcome, RescaleRequest } from './rescaler.js';

/** What clients may ask of the coordinator. */
export interface ClientRequests {
  /** Store modules that came with bytes; return the hashes referred to but not held. */
  resolveModules(m: MessageOf<'SubmitJob'>): string[];
  submit(m: MessageOf<'SubmitJob'>, client: ClientSession): Promise<JobState>;
  listJobs(includeCompleted: boolean): JobView[];
  cancel(jobId: string, reason: string): { ok: boolean; message: string };
  savepoint(jobId: string, dir: string, cancelAfter: boolean): Promise<{ ok: boolean; message: string; path: string }>;
  rescale(jobId: string, request: RescaleRequest, cause: string): Promise<RescaleOutcome>;
  /** The client's session closed: a job it submitted has no one to tell when it ends. */
  forget(c: ClientSession): void;
}

function submitAck(
  ok: boolean,
  jobId: string,
  message: string,
  missingModuleHashes: string[] = [],
  code = '',
): MessageOf<'SubmitJobAck'> {
  return makeMessage('SubmitJobAck', {
    ok,
    jobId,
    message,
    missingModuleHashes,
    protocolVersion: LOCAL_PROTOCOL.version,
    minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
    code,
  });
}

export class ClientFront {
  constructor(
    private readonly clients: ClientSessions,
    private readonly requests: ClientRequests,
    /** Where a refused hello is logged (rate-limited). */
    private readonly warn: (line: string) => void,
  ) {}

  /** A connection opened with HelloClient; `refusal` is set when its protocol cannot be spoken. */
  async hello(conn: FrameConnection, m: MessageOf<'HelloClient'>, refusal: string | undefined): Promise<void> {
    const client = refusal ?? this.clients.open(conn, m.clientName, (c) => this.requests.forget(c));
    if (typeof client === 'string') {
      if (!refusal) this.warn(`client ${m.clientName} (${conn.peer}) refused: ${client}`);
      await writeFrame(conn.socket, submitAck(false, '', client)).catch(() => undefined);
      conn.close();
      return;
    }
    conn.limitBacklog(CLIENT_DISPATCH_BACKLOG_FRAMES);
    conn.start({
      onMessage: (msg) => {
        this.clients.touch(client);
        return this.dispatch(client, msg);
      },
    });
  }

  private async dispatch(c: ClientSession, m: Message): Promise<void> {
    // Each reply waits for the client to read (see ClientSessions.send) before the next request is handled.
    const reply = async (r: Message): Promise<void> => void (await this.clients.send(c, r));
    switch (m.type) {
      case 'SubmitJob':
        return reply(await this.submit(c, m));
      case 'ListJobs':
        return reply(makeMessage('ListJobsReply', { jobs: this.requests.listJobs(m.includeCompleted).map(toSummary) }));
      case 'CancelJob': {
        const r = this.requests.cancel(m.jobId, m.reason || `cancelled by client ${c.name}`);
        return reply(
          makeMessage('ClientReply', {
            requestKind: MessageKind.CancelJob,
            ok: r.ok,
            jobId: m.jobId,
            message: r.message,
          }),
        );
      }
      case 'Savepoint': {
        const r = await this.requests.savepoint(m.jobId, m.targetDir, m.cancelAfter);
        return reply(
          makeMessage('ClientReply', {
            requestKind: MessageKind.Savepoint,
            ok: r.ok,
            jobId: m.jobId,
            message: r.message,
            savepointPath: r.path,
          }),
        );
      }
      case 'RescaleJob':
      case 'RescaleOperator': {
        const request =
          m.type === 'RescaleJob'
            ? {
                parallelism: m.parallelism,
                operators: Object.fromEntries(m.operators.map((o) => [o.operatorId, o.parallelism])),
                mode: m.mode as RescaleModeRequest,
              }
            : { parallelism: 0, operators: { [m.operatorId]: m.parallelism } };
        const r = await this.requests.rescale(m.jobId, request, `client ${c.name}`);
        return reply(
          makeMessage('ClientReply', {
            requestKind: MessageKind[m.type],
            ok: r.ok,
            jobId: m.jobId,
            message: r.message,
          }),
        );
      }
      default:
        throw new FrameDecodeError(`a client may not send ${m.type}`);
    }
  }

  private async submit(c: ClientSession, m: MessageOf<'SubmitJob'>): Promise<MessageOf<'SubmitJobAck'>> {
    try {
      // The SDK gate runs on the advert, before any reference is resolved or byte requested.
      checkSubmitSdk(m);
      const missing = this.requests.resolveModules(m);
      if (missing.length > 0)
        return submitAck(
          false,
          '',
          `upload the job module: this coordinator does not hold ${missing.join(', ')}`,
          missing,
        );
      const job = await this.requests.submit(m, c);
      return submitAck(true, job.id, `job ${job.id} submitted`);
    } catch (err) {
      return submitAck(false, '', (err as Error).message, [], err instanceof ClinkError ? err.code : '');
    }
  }
}
