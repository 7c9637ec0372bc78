/**
 * A data connection proves it belongs to the deploy attempt it names: its DataHello carries an
 * HMAC-SHA256 of its fields under the attempt's secret, which the coordinator sends only in Deploy (never
 * in the HTTP API). A peer that read the job and task ids from the API cannot make one, and a MAC made for
 * one channel names that channel only.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { MessageOf } from '../protocol/index.js';

type HelloFields = Omit<MessageOf<'DataHello'>, 'type' | 'mac'>;

export function helloMac(secret: string, h: HelloFields): string {
  const fields = [
    h.jobId,
    h.attempt,
    h.edgeIndex,
    h.upstreamSubtask,
    h.downstreamTaskId,
    h.downstreamSubtask,
    h.upstreamTaskId,
  ];
  return createHmac('sha256', secret).update(fields.join('\u0000')).digest('hex');
}

/** Whether `hello` carries the MAC its fields have under `secret` (constant time). */
export function helloMacValid(secret: string, hello: MessageOf<'DataHello'>): boolean {
  const expected = Buffer.from(helloMac(secret, hello), 'hex');
  const given = Buffer.from(hello.mac, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
