/**
 * A mesh run's links (design record 017): exactly one full-duplex connection per pair of members. A
 * member dials every member with a lower position and accepts every higher one on its exchange listener,
 * where the first frame (MeshLinkHello) says which member dials and proves it is of this run (the
 * topology fingerprint). Dialling and accepting run at once, so no member waits on one that waits on it;
 * a member not listening yet is dialled again until the deadline, which names the members missing.
 */
import type { Server, Socket } from 'node:net';
import { dial as dialPeer, FrameConnection, listenOn } from '../net/index.js';
import { encodeFrame, makeMessage, MAX_FIRST_FRAME_BYTES } from '../protocol/index.js';
import { setTimer } from '../util/index.js';
import { MeshError, readWithin, hostPort } from './rendezvous.js';

/** How often a member not listening yet is dialled again. */
const REDIAL_MS = 100;

/** Connections a listener holds before its mesh is opened (a higher member may dial early). */
const MAX_EARLY_CONNECTIONS = 1_024;

/**
 * A member's exchange listener. It listens from before the rendezvous, so a higher member can dial it
 * before this member opens its mesh: those connections wait here (bounded) until openMesh takes them.
 */
export class ExchangeListener {
  private readonly early: Socket[] = [];
  private taker: ((s: Socket) => void) | undefined;

  private constructor(
    readonly server: Server,
    /** host:port as peers dial it (port 0 asked for: the port given). */
    readonly address: string,
  ) {
    server.on('connection', (s) => {
      if (this.taker) this.taker(s);
      else if (this.early.length < MAX_EARLY_CONNECTIONS) this.early.push(s);
      else s.destroy();
    });
  }

  static async listen(exchange: string): Promise<ExchangeListener> {
    const { host, port } = hostPort(exchange, '--exchange');
    const { server, port: bound } = await listenOn(host, port, { port: '--exchange', host: '--exchange' });
    return new ExchangeListener(server, `${host}:${bound}`);
  }

  /** Hand every connection, the early ones first, to `taker` until stopped. */
  take(taker: (s: Socket) => void): () => void {
    this.taker = taker;
    for (const s of this.early.splice(0)) taker(s);
    return () => {
      if (this.taker === taker) this.taker = undefined;
    };
  }

  close(): void {
    for (const s of this.early.splice(0)) s.destroy();
    this.server.close();
  }
}

export interface MeshLinks {
  /** The link to each other member, by position. */
  peers: Map<number, FrameConnection>;
  close(): void;
}

export interface OpenMeshOptions {
  members: readonly string[];
  me: number;
  /** This member's exchange listener. */
  listener: ExchangeListener;
  fingerprint: string;
  timeoutMs: number;
}

export function openMesh(o: OpenMeshOptions): Promise<MeshLinks> {
  const peers = new Map<number, FrameConnection>();
  const n = o.members.length;
  const close = (): void => {
    for (const c of peers.values()) c.close();
  };
  return new Promise<MeshLinks>((resolve, reject) => {
    let settled = false;
    const stops: (() => void)[] = [];
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      for (const stop of stops) stop();
      stopTaking();
      if (err) {
        close();
        reject(err);
      } else resolve({ peers, close });
    };
    const add = (member: number, conn: FrameConnection): void => {
      peers.set(member, conn);
      if (peers.size === n - 1) finish();
    };
    const deadline = setTimer(() => {
      const missing = o.members.filter((_, i) => i !== o.me && !peers.has(i));
      finish(
        new MeshError(
          `member ${o.me} (${o.members[o.me]}) has no link to ${missing.join(', ')} after ${o.timeoutMs} ms; is every member running, and its --exchange address reachable from here?`,
        ),
      );
    }, o.timeoutMs);
    // Accept the higher members.
    const onConnection = (socket: Socket): void => {
      socket.setNoDelay(true);
      const conn = new FrameConnection(socket, { role: 'mesh.link', firstFrameMaxBytes: MAX_FIRST_FRAME_BYTES });
      void readWithin(conn, o.timeoutMs).then((hello) => {
        const ok =
          hello?.type === 'MeshLinkHello' &&
          hello.fingerprint === o.fingerprint &&
          hello.member > o.me &&
          hello.member < n &&
          !peers.has(hello.member);
        if (!ok || settled) return conn.close();
        add(hello.member, conn);
      });
    };
    const stopTaking = o.listener.take(onConnection);
    // Dial the lower ones, again and again until each answers.
    for (let j = 0; j < o.me; j++) {
      const { host, port } = hostPort(o.members[j]!, 'a member address');
      let timer: NodeJS.Timeout | undefined;
      let socket: Socket | undefined;
      const dial = (): void => {
        if (settled) return;
        const s = (socket = dialPeer(host, port));
        s.once('error', () => {
          s.destroy();
          timer = setTimer(dial, REDIAL_MS);
        });
        s.once('connect', () => {
          const conn = new FrameConnection(s, { role: 'mesh.link' });
          s.write(encodeFrame(makeMessage('MeshLinkHello', { member: o.me, fingerprint: o.fingerprint })));
          add(j, conn);
        });
      };
      stops.push(() => {
        clearTimeout(timer);
        if (socket && !peers.has(j)) socket.destroy();
      });
      dial();
    }
    if (n === 1) finish();
  });
}
