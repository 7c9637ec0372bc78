/**
 * A worker driven by hand over a raw socket: it registers, heartbeats every 200 ms, and, when given
 * `onMessage`, reads every frame the coordinator sends and hands it over (otherwise it reads nothing
 * after the RegisterAck). For tests of what the coordinator does with a worker that misbehaves.
 */
import { connect, type Socket } from 'node:net';
import { FrameReader } from '../../src/net/index.js';
import { decodeMessage, encodeFrame, makeMessage, type Message } from '../../src/protocol/index.js';

export interface FakeWorker {
  socket: Socket;
  ack: Message;
  stopHeartbeats: () => void;
  send: (m: Message) => void;
}

export async function fakeWorker(
  port: number,
  id: string,
  o: {
    protocolVersion?: number;
    minCompatible?: number;
    slots?: number;
    onMessage?: (m: Message, w: FakeWorker) => void;
  } = {},
): Promise<FakeWorker> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  socket.write(
    encodeFrame(
      makeMessage('Register', {
        workerId: id,
        dataHost: '127.0.0.1',
        slotCount: o.slots ?? 4,
        protocolVersion: o.protocolVersion ?? 1,
        minCompatibleProtocolVersion: o.minCompatible ?? 1,
      }),
    ),
  );
  const reader = new FrameReader(socket);
  const ack = decodeMessage((await reader.next())!);
  let seq = 0;
  const hb = setInterval(
    () => !socket.destroyed && socket.write(encodeFrame(makeMessage('Heartbeat', { seq: ++seq }))),
    200,
  );
  socket.on('error', () => undefined);
  socket.on('close', () => clearInterval(hb));
  const w: FakeWorker = {
    socket,
    ack,
    stopHeartbeats: () => clearInterval(hb),
    send: (m) => void (!socket.destroyed && socket.write(encodeFrame(m))),
  };
  if (o.onMessage) {
    const onMessage = o.onMessage;
    void (async () => {
      for (let frame = await reader.next().catch(() => null); frame; frame = await reader.next().catch(() => null))
        onMessage(decodeMessage(frame), w);
    })();
  } else reader.close();
  return w;
}
