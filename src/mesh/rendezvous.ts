/**
 * A mesh run's rendezvous (design record 017): the leader, itself a member, listens on its control port;
 * each joiner registers its exchange address and its topology shape; once every member has registered
 * the leader sends each the sorted member set and its own shape. A member is its position in that set,
 * so the leader is member 0 only if its address sorts first. A joiner whose job differs, or whose
 * address is taken, is refused at once with the reason; one that never comes ends the leader's wait
 * at its deadline, naming who came; a leader gone mid-way ends each joiner's.
 */
import type { Socket } from 'node:net';
import { ClinkError } from '../errors.js';
import { connectWithin, FrameConnection, listenOn } from '../net/index.js';
import {
  encodeFrame,
  LOCAL_PROTOCOL,
  makeMessage,
  MAX_FIRST_FRAME_BYTES,
  type Message,
  type MessageOf,
} from '../protocol/index.js';
import { setTimer } from '../util/index.js';
import { shapeDifference, topologyFingerprint, type TopologyShape } from './fingerprint.js';

/** A mesh rendezvous failed: the message says which member, what happened and what to do. */
export class MeshError extends ClinkError {
  constructor(message: string, options?: ErrorOptions) {
    super('CLINK_ERR_MESH', message, options);
  }
}

/** How long a run's members may take to come together. @default 60,000 */
export const DEFAULT_RENDEZVOUS_TIMEOUT_MS = 60_000;
/** How often a joiner dials a leader not listening yet. */
const REDIAL_LEADER_MS = 200;
/** How long a connection to the control port may take to register. */
const REGISTER_TIMEOUT_MS = 10_000;

export interface Membership {
  /** Every member's exchange address, sorted. */
  members: string[];
  /** This process's position in `members`. */
  me: number;
  /** The topology every member runs (the leader's). */
  shape: TopologyShape;
  /** The completed checkpoint every member resumes from (0: from the start), and the marker directory holding it. */
  restoreCheckpointId: number;
  restoreDir: string;
  /** The leader's checkpoint settings (JSON) every member runs with; '' = each its own. */
  checkpointJson: string;
  /** The run attempt: one more at each rendezvous of a restarted run. */
  attempt: number;
}

/** The leader's side once settled: its control connection to each joiner, by exchange address. */
export interface Led extends Membership {
  joiners: Map<string, FrameConnection>;
  /** The oldest protocol any member speaks (what the run's members can all be sent). */
  oldestProtocol: number;
  close(): void;
}

/** A joiner's side once settled: its control connection to the leader. */
export interface Joined extends Membership {
  leader: FrameConnection;
  close(): void;
}

export interface LeadOptions {
  /** Members in all, the leader included. */
  members: number;
  control: { host: string; port: number };
  exchange: string;
  shape: TopologyShape;
  timeoutMs?: number;
  /** Told the control port once it listens (0 asked for a free one). */
  onListening?: (port: number) => void;
  /** What the members resume from (the leader decides): 0 = from the start; and where its marker is. */
  restoreCheckpointId?: number;
  restoreDir?: string;
  checkpointJson?: string;
  attempt?: number;
}

export const hostPort = (address: string, flag: string): { host: string; port: number } => {
  const i = address.lastIndexOf(':');
  const port = Number(address.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port < 0 || port > 65_535)
    throw new MeshError(`${flag} ${address} is not host:port`);
  return { host: address.slice(0, i), port };
};

const send = (conn: FrameConnection, m: Message): void => void conn.socket.write(encodeFrame(m));

/** The next frame, or null when the connection ends (or is closed after `ms` without one). */
export async function readWithin(conn: FrameConnection, ms: number): Promise<Message | null> {
  const timer = setTimer(() => conn.close(), ms);
  try {
    return await conn.readOne();
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

export async function lead(o: LeadOptions): Promise<Led> {
  if (!Number.isInteger(o.members) || o.members < 1)
    throw new MeshError(`--lead needs the number of members (at least 1), got ${o.members}`);
  const timeoutMs = o.timeoutMs ?? DEFAULT_RENDEZVOUS_TIMEOUT_MS;
  const joiners = new Map<string, FrameConnection>();
  const protocols = new Map<string, number>();
  const fingerprint = topologyFingerprint(o.shape);
  const { server, port } = await listenOn(o.control.host, o.control.port, { port: '--control', host: '--control' });
  const pending = new Set<FrameConnection>();
  o.onListening?.(port);
  const closeAll = (): void => {
    server.close();
    for (const c of [...pending, ...joiners.values()]) c.close();
  };
  return new Promise<Led>((resolve, reject) => {
    let settled = false;
    const settle = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      server.close();
      if (err) {
        closeAll();
        reject(err);
        return;
      }
      const members = [o.exchange, ...joiners.keys()].sort();
      const shapeJson = JSON.stringify(o.shape);
      const restoreCheckpointId = o.restoreCheckpointId ?? 0;
      const restoreDir = o.restoreDir ?? '';
      const checkpointJson = o.checkpointJson ?? '';
      const attempt = o.attempt ?? 0;
      for (const c of joiners.values())
        send(
          c,
          makeMessage('MeshMembers', {
            members,
            fingerprint,
            shapeJson,
            restoreCheckpointId,
            attempt,
            restoreDir,
            checkpointJson,
          }),
        );
      resolve({
        members,
        me: members.indexOf(o.exchange),
        shape: o.shape,
        restoreCheckpointId,
        restoreDir,
        checkpointJson,
        attempt,
        joiners,
        oldestProtocol: Math.min(LOCAL_PROTOCOL.version, ...[...joiners.keys()].map((j) => protocols.get(j)!)),
        close: closeAll,
      });
    };
    const deadline = setTimer(() => {
      const came = [o.exchange, ...joiners.keys()];
      settle(
        new MeshError(
          `${came.length} of ${o.members} members registered within ${timeoutMs} ms (${came.join(', ')}); start the others with clink run <job> --join ${o.control.host}:${port} --exchange <host:port>`,
        ),
      );
    }, timeoutMs);
    const register = async (socket: Socket): Promise<void> => {
      socket.setNoDelay(true);
      const conn = new FrameConnection(socket, {
        role: 'mesh.leader',
        firstFrameMaxBytes: MAX_FIRST_FRAME_BYTES,
        dispatchAfterClose: true,
      });
      pending.add(conn);
      const refuse = (reason: string): void => {
        send(conn, makeMessage('MeshRefused', { reason }));
        void conn.drained().finally(() => conn.close());
      };
      const first = await readWithin(conn, REGISTER_TIMEOUT_MS);
      pending.delete(conn);
      if (!first) return conn.close();
      if (first.type !== 'MeshRegister')
        return refuse(`expected MeshRegister, got ${first.type}: is this a mesh member?`);
      if (settled || joiners.size + 1 >= o.members)
        return refuse(`the run is complete with ${o.members} members; ${first.exchange} is not one of them`);
      if (first.exchange === o.exchange || joiners.has(first.exchange))
        return refuse(
          `exchange address ${first.exchange} is taken by another member; give each member its own --exchange`,
        );
      let theirs: TopologyShape;
      try {
        theirs = JSON.parse(first.shapeJson) as TopologyShape;
      } catch {
        return refuse('its topology shape does not parse');
      }
      const differs = shapeDifference(o.shape, theirs);
      if (differs) return refuse(`its job differs from the leader's: ${differs}`);
      joiners.set(first.exchange, conn);
      protocols.set(first.exchange, first.protocolVersion || 1);
      // A joiner gone before the run is complete frees its place.
      void conn.closed.then(() => {
        if (!settled && joiners.get(first.exchange) === conn) joiners.delete(first.exchange);
      });
      if (joiners.size + 1 === o.members) settle();
    };
    server.on('connection', (socket) => void register(socket));
    if (o.members === 1) settle();
  });
}

export interface JoinOptions {
  /** The leader's control address, host:port. */
  leader: string;
  exchange: string;
  shape: TopologyShape;
  timeoutMs?: number;
}

export async function join(o: JoinOptions): Promise<Joined> {
  const timeoutMs = o.timeoutMs ?? DEFAULT_RENDEZVOUS_TIMEOUT_MS;
  const { host, port } = hostPort(o.leader, '--join');
  // Members may start in any order (a batch scheduler starts them at once; a restarted run's leader
  // leads again only once it has seen the failure): a leader not listening yet is dialled again.
  const deadline = Date.now() + timeoutMs;
  let socket: Socket | undefined;
  for (let tried = 0; !socket; tried++) {
    try {
      socket = await connectWithin(
        host,
        port,
        'the mesh leader',
        Math.max(1, Math.min(deadline - Date.now(), REGISTER_TIMEOUT_MS)),
      );
    } catch (err) {
      if (Date.now() + REDIAL_LEADER_MS >= deadline)
        throw new MeshError(
          `cannot reach the mesh leader at ${o.leader} (--join) within ${timeoutMs} ms: ${(err as Error).message}`,
          { cause: err },
        );
      await new Promise((r) => setTimeout(r, REDIAL_LEADER_MS));
    }
  }
  const conn = new FrameConnection(socket, { role: 'mesh.member', dispatchAfterClose: true });
  send(
    conn,
    makeMessage('MeshRegister', {
      exchange: o.exchange,
      fingerprint: topologyFingerprint(o.shape),
      shapeJson: JSON.stringify(o.shape),
      protocolVersion: LOCAL_PROTOCOL.version,
    }),
  );
  const answer = await readWithin(conn, timeoutMs);
  const fail = (message: string): never => {
    conn.close();
    throw new MeshError(message);
  };
  if (!answer)
    return fail(
      `the mesh leader at ${o.leader} closed the connection before the run was complete (it stopped, or ${timeoutMs} ms passed); start it again and rejoin`,
    );
  if (answer.type === 'MeshRefused')
    return fail(`the mesh leader at ${o.leader} refused this member: ${answer.reason}`);
  if (answer.type !== 'MeshMembers')
    return fail(`the mesh leader at ${o.leader} answered ${answer.type}, not MeshMembers`);
  const members = answer as MessageOf<'MeshMembers'>;
  const shape = JSON.parse(members.shapeJson) as TopologyShape;
  const differs = shapeDifference(shape, o.shape);
  if (differs) return fail(`this member's job differs from the leader's: ${differs}`);
  const me = members.members.indexOf(o.exchange);
  if (me < 0) return fail(`the leader's member set does not include this member's exchange address ${o.exchange}`);
  return {
    members: members.members,
    me,
    shape,
    restoreCheckpointId: members.restoreCheckpointId,
    restoreDir: members.restoreDir,
    checkpointJson: members.checkpointJson,
    attempt: members.attempt,
    leader: conn,
    close: () => conn.close(),
  };
}
