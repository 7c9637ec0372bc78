/**
 * How a message broker's bytes become record fields and back: `json` (a value parsed from UTF-8 JSON),
 * `string` (UTF-8 text) or `bytes` (a Buffer as is). Shared by the Kafka and NATS connectors.
 */
import { z } from 'zod';
import { ConnectorError } from '../errors.js';

export const Format = z.enum(['json', 'string', 'bytes']);
export type Format = z.infer<typeof Format>;

/** Bytes to a field value; `where` names the message for the error a bad JSON payload gives. */
export function decode(format: Format, bytes: Buffer | Uint8Array | null | undefined, where: () => string): unknown {
  if (bytes === null || bytes === undefined) return null;
  if (format === 'bytes') return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  const text = Buffer.isBuffer(bytes) ? bytes.toString('utf8') : Buffer.from(bytes).toString('utf8');
  if (format === 'string') return text;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConnectorError(
      `${where()} is not JSON (${(err as Error).message}); read it with format 'string' or 'bytes'`,
    );
  }
}

/** A field value to bytes; undefined and null stay null (a Kafka tombstone, no key). */
export function encode(format: Format, value: unknown): Buffer | undefined {
  if (value === undefined || value === null) return undefined;
  if (format === 'bytes') {
    if (Buffer.isBuffer(value)) return value;
    if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    throw new ConnectorError(
      `format 'bytes' writes a Buffer or Uint8Array, got ${typeof value}; use format 'json' or 'string'`,
    );
  }
  if (format === 'string') return Buffer.from(typeof value === 'string' ? value : String(value), 'utf8');
  return Buffer.from(JSON.stringify(value), 'utf8');
}
