/**
 * Writes gathered per synchronous run: the first write corks the socket and a microtask uncorks it, so
 * every frame written before the code that wrote it yields (a batch, the watermark behind it, the credits
 * a task returns while it works through its queue) leaves in one writev, not a syscall each. A microtask
 * runs before any I/O or timer, so nothing waits longer than the work that wrote it.
 */
import type { Socket } from 'node:net';

export function gatheredWrites(socket: Socket): (chunk: Uint8Array) => void {
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  return (chunk) => {
    if (!corked) {
      corked = true;
      socket.cork();
      queueMicrotask(uncork);
    }
    socket.write(chunk);
  };
}
