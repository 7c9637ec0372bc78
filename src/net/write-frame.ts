/**
 * writeFrame: send one frame and wait until the OS has taken it, bounded by a deadline. For clients
 * and for the replies a coordinator sends a peer it has not admitted yet (a refusal, a RegisterAck),
 * where a peer that does not read must not hold the sender. A missed deadline destroys the socket.
 */
import type { Socket } from 'node:net';
import { encodeFrame, type Message } from '../protocol/index.js';
import { FrameTimeoutError } from './frame-reader.js';
import { setTimer } from '../util/index.js';

/** The bound on a reply to a peer not yet admitted (the reference's kAdmissionReplySendBound). */
export const ADMISSION_REPLY_SEND_BOUND_MS = 250;

export function writeFrame(
  socket: Socket,
  message: Message,
  deadlineMs = ADMISSION_REPLY_SEND_BOUND_MS,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (socket.destroyed) {
      reject(new Error('socket is closed'));
      return;
    }
    const timer = setTimer(() => {
      socket.destroy();
      reject(new FrameTimeoutError(`peer did not take a ${message.type} frame within ${deadlineMs} ms`));
    }, deadlineMs);
    socket.write(encodeFrame(message), (err) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve();
    });
  });
}
