/** Encode and decode whole messages and frames. Pure: bytes in, messages out. */
import {
  MESSAGE_BY_KIND,
  MESSAGES,
  type Message,
  type MessageBody,
  type MessageName,
  type MessageOf,
} from './messages.js';
import { readFields, writeFields, type Fields, type ValuesOf } from './schema.js';
import { FRAME_HEADER_BYTES, FrameDecodeError, MessageBuilder, MessageReader } from './wire.js';

function defOf(name: MessageName): { kind: number; fields: Fields } {
  return MESSAGES[name] as unknown as { kind: number; fields: Fields };
}

/** A message with every tail field it does not name set to its default. */
export function makeMessage<N extends MessageName>(
  type: N,
  body: Omit<MessageBody<N>, TailKeys<N>> & Partial<MessageBody<N>>,
): MessageOf<N> {
  const out: Record<string, unknown> = { type };
  const fields = defOf(type).fields;
  for (const k in fields) {
    const given = (body as Record<string, unknown>)[k];
    const f = fields[k]!;
    out[k] =
      given !== undefined
        ? given
        : f.tail
          ? Array.isArray(f.default)
            ? [...(f.default as unknown[])]
            : f.default
          : undefined;
    if (out[k] === undefined) throw new RangeError(`${type}.${k} is required`);
  }
  return out as MessageOf<N>;
}

type TailKeys<N extends MessageName> = {
  [K in keyof (typeof MESSAGES)[N]['fields']]: (typeof MESSAGES)[N]['fields'][K] extends { tail: true } ? K : never;
}[keyof (typeof MESSAGES)[N]['fields']] &
  string;

function writeBody(b: MessageBuilder, m: Message): void {
  const def = defOf(m.type);
  b.u8(def.kind);
  writeFields(def.fields, b, m as unknown as ValuesOf<Fields>, m.type);
}

/** The payload of a message: its kind byte, then its fields. */
export function encodeMessage(m: Message): Buffer {
  const b = new MessageBuilder();
  writeBody(b, m);
  return Buffer.from(b.view());
}

/** A whole frame: the 4-byte big-endian payload length, then the payload. */
export function encodeFrame(m: Message): Buffer {
  const b = new MessageBuilder();
  const at = b.reserveU32();
  writeBody(b, m);
  b.patchU32(at, b.length - FRAME_HEADER_BYTES);
  return Buffer.from(b.view());
}

/**
 * Decode a payload (kind byte first). Throws FrameDecodeError, and nothing else, for any input that is
 * not a message: truncated, a count beyond the bytes left, an unknown kind, a bad value. Bytes after
 * the last known field are a newer peer's additions and are ignored.
 */
export function decodeMessage(payload: Uint8Array): Message {
  if (payload.length === 0) throw new FrameDecodeError('empty frame: no message kind');
  const kind = payload[0]!;
  const name = MESSAGE_BY_KIND.get(kind);
  if (name === undefined) throw new FrameDecodeError(`unknown message kind ${kind}`);
  const r = new MessageReader(payload, 1);
  try {
    const body = readFields(defOf(name).fields, r, name);
    return { type: name, ...body } as Message;
  } catch (err) {
    if (err instanceof FrameDecodeError) throw err;
    // A decoder must never let anything but its typed error escape (a deep RangeError included).
    throw new FrameDecodeError(`${name} does not decode: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}

/** Decode a frame with its header, checking the header matches the bytes. */
export function decodeFrame(frame: Uint8Array): Message {
  if (frame.length < FRAME_HEADER_BYTES)
    throw new FrameDecodeError(`frame of ${frame.length} bytes has no complete header`);
  const n = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(0);
  if (n !== frame.length - FRAME_HEADER_BYTES) {
    throw new FrameDecodeError(`frame header says ${n} bytes, ${frame.length - FRAME_HEADER_BYTES} follow`);
  }
  return decodeMessage(frame.subarray(FRAME_HEADER_BYTES));
}
