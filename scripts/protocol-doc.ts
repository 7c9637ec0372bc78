/**
 * Renders docs/protocol.md from the message schema, so the document is the code's layout and cannot
 * drift from it (test/protocol/doc.test.ts compares them). Run: `node --import tsx scripts/protocol-doc.ts`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  CLUSTER_PROTOCOL_VERSION,
  MAX_FIRST_FRAME_BYTES,
  MAX_FRAME_BYTES,
  MAX_REGISTER_STRING_BYTES,
  MESSAGES,
  MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION,
  type Codec,
  type Fields,
} from '../src/protocol/index.js';

function typeName(c: Codec<unknown>, structs: Map<string, Fields>): string {
  const d = c.desc;
  switch (d.t) {
    case 'string':
      return Number.isFinite(d.maxBytes) ? `string (at most ${d.maxBytes} bytes)` : 'string';
    case 'enum':
      return `enum u8: ${d.values.map((v, i) => `${i}=${v}`).join(', ')}`;
    case 'list':
      return `list of ${typeName(d.of, structs)}`;
    case 'struct':
      structs.set(d.name, d.fields);
      return `[${d.name}](#${d.name.toLowerCase()})`;
    default:
      return d.t;
  }
}

function fmtDefault(v: unknown): string {
  if (Array.isArray(v)) return v.length === 0 ? 'empty' : JSON.stringify(v);
  return typeof v === 'string' ? (v === '' ? "''" : `'${v}'`) : String(v);
}

function fieldTable(fields: Fields, structs: Map<string, Fields>): string[] {
  const rows = ['| # | field | type | absent in an older frame | meaning |', '| --- | --- | --- | --- | --- |'];
  Object.entries(fields).forEach(([k, f], i) => {
    rows.push(
      `| ${i + 1} | \`${k}\` | ${typeName(f.codec, structs)} | ${f.tail ? `reads as ${fmtDefault(f.default)}` : 'required'} | ${f.doc} |`,
    );
  });
  return rows;
}

export function renderProtocolDoc(): string {
  const out: string[] = [];
  const structs = new Map<string, Fields>();
  out.push(
    '# The cluster wire protocol',
    '',
    '<!-- Generated from src/protocol/messages.ts by scripts/protocol-doc.ts; do not edit by hand. -->',
    '',
    'Coordinator, workers and clients speak one binary protocol over TCP (or TLS).',
    '',
    '## Frames',
    '',
    "- A frame is a 4-byte big-endian length, then that many bytes of payload. The payload's first byte is the message kind; the fields follow in the order listed below.",
    "- Integers are big-endian: `u8`, `u16`, `u32`, `i32` (two's complement), `u64` (carried as a JS number, so at most 2^53 - 1; larger is refused), `f64` (IEEE 754). `bool` is a `u8` that must be 0 or 1.",
    '- `string` is `[u32 length][UTF-8 bytes]` (invalid UTF-8 is refused); `bytes` is `[u32 length][bytes]`.',
    '- `list of T` is `[u32 count][T x count]`. A count that cannot fit in the bytes left (each element takes at least one byte, at least four for strings and records) is malformed, refused before anything is allocated.',
    '- A record (below) is `[u32 length][fields]`: length-prefixed, so records grow by tail fields exactly as messages do, and an older reader skips fields it does not know.',
    '',
    '## Caps',
    '',
    `- A frame over ${MAX_FRAME_BYTES} bytes (256 MiB) is refused on its header alone. A connection's first frame (Register or HelloClient) is capped at ${MAX_FIRST_FRAME_BYTES} bytes (64 KiB).`,
    `- A Register's \`workerId\` and \`dataHost\`, and a HelloClient's \`clientName\`, are at most ${MAX_REGISTER_STRING_BYTES} bytes.`,
    '- A body is read in chunks of up to 64 KiB as they arrive: memory follows the bytes received, never the length claimed. Reads have an idle bound, and a frame has a deadline, so a peer sending a byte at a time cannot hold a reader.',
    '- A frame that does not decode (its kind unknown, its header over the cap, a field truncated or out of range) costs the peer its connection, is logged once and counted in `clink_malformed_frames_total`.',
    '',
    '## Versions and how to change the protocol',
    '',
    `This build speaks protocol ${CLUSTER_PROTOCOL_VERSION} and talks to peers of protocol ${MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION} or later. Register, HelloClient, RegisterAck and SubmitJobAck carry \`protocolVersion\` and \`minCompatibleProtocolVersion\`; two peers talk only when each falls inside the other's range, and a refusal names both versions and which end to upgrade. A missing field reads as 1.`,
    '',
    'Rules for changing a message:',
    '',
    '1. **Add, never change.** A new field goes at the end of its message (or record) as a *tail* field with a default. Older peers do not send it and decode to the default; older decoders ignore the bytes they do not know. No version bump: this is what lets a cluster be rolled one node at a time.',
    '2. **Never reorder, remove, retype or change the meaning of a field**, and never reuse a kind number. Where such a change is unavoidable, bump `CLUSTER_PROTOCOL_VERSION`, and gate the new behaviour to peers that declared the new version.',
    '3. **A new message kind** a peer must understand is gated by version too: send it only to peers whose version has it.',
    '4. Raising `MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION` strands every older peer at its handshake: an end-of-support decision.',
    "5. Every coordinator-to-worker message ends with `epoch`, the sender's fencing epoch (0 = unfenced). Workers drop frames whose epoch is below the one they are bound to.",
    '6. After a change, regenerate this file (`node --import tsx scripts/protocol-doc.ts`) and the golden vectors (`UPDATE_VECTORS=1 npm test -- protocol`), and check the vector diff only appends bytes, at the end of the message or inside a record (whose length prefix grows with it).',
    '',
    '## Message kinds',
    '',
    '| kind | message | direction | what it is |',
    '| --- | --- | --- | --- |',
  );
  const entries = Object.entries(MESSAGES).sort((a, b) => a[1].kind - b[1].kind);
  for (const [name, d] of entries)
    out.push(`| ${d.kind} | [${name}](#${name.toLowerCase()}) | ${d.direction} | ${d.doc} |`);
  out.push(
    '',
    "CancelJob (103) is one kind in both directions: a client request to the coordinator, and the coordinator's broadcast to workers (where it carries the epoch). Client request kinds are unique.",
    '',
  );
  for (const [name, d] of entries) {
    out.push(
      `### ${name}`,
      '',
      `Kind ${d.kind}, ${d.direction}: ${d.doc}.`,
      '',
      ...fieldTable(d.fields as Fields, structs),
      '',
    );
  }
  out.push('## Records', '');
  const done = new Set<string>();
  for (let more = true; more;) {
    more = false;
    for (const [name, fields] of [...structs].sort((a, b) => a[0].localeCompare(b[0]))) {
      if (done.has(name)) continue;
      done.add(name);
      more = true;
      out.push(`### ${name}`, '', ...fieldTable(fields, structs), '');
    }
  }
  out.push(
    '## Data-plane record batches',
    '',
    'A batch of records travels as `[u32 count][u8 flags][f64 timestamp x count, when flags bit 0 is set][values]` (`encodeRecordBatch`; integers big-endian like the rest of the protocol). Timestamps are sent only when some record has one; when flags bit 2 is set too, every record has the same timestamp and it is sent once (one f64). The values are a msgpack array of count values (msgpackr records), or, when flags bit 1 is set, **columns** (design record 018, `src/protocol/columns.ts`):',
    '',
    '```',
    'columns = u16le fieldCount, field x fieldCount, column x fieldCount',
    'field   = u16le nameBytes, name (UTF-8), u8 columnType',
    'column  = 1 F64:    f64le x count                       (starts at a multiple of 8 from the batch start)',
    '        | 2 I32:    i32le x count                       (a multiple of 4)',
    '        | 3 STR:    u32le utf8Bytes, u32le length x count (UTF-16 units), the UTF-8 of the strings back to back (a multiple of 4)',
    '        | 4 BOOL:   u8 x count',
    '        | 5 PACKED: u32le bytes, a msgpack array of count values',
    '        | 6 CONST:  f64le                                (every value of the column this number; a multiple of 8)',
    '```',
    '',
    "Zero bytes pad a column to its alignment. Every record of a columnar batch is a plain object with exactly those fields in that order; a batch of any other shape is msgpack. A sender writes columns only to a receiver whose `DataCredit` said `columns: true` (every credit of this build says so; a receiver from before sends no such field, which reads as false, and gets msgpack as before). A sender writes one timestamp (bit 2) and constant columns (type 6: a number column of one value, 0 and -0 being two, NaN never one; only where it is smaller, from 4 integers or 2 doubles; read back as that number in every row, -0 and all) only to a receiver whose `DataCredit` said `constants: true` (every credit of this build; a receiver from before gets a timestamp per record and typed columns), and only in batches of at most 65,536 records: a receiver refuses a count larger than the batch's bytes unless it is columnar or has one timestamp, and then larger than 65,536. A window's results carry its start and end, the same for every record of a fire, which were 16 of a result's 32 bytes with its timestamp. When flags bit 3 is set too, the records are **tuples**: arrays of fieldCount values (a pre-aggregation's `[key, accumulator]` partials, or a job's own pairs), one column per position, every field name empty (a named one is refused, as is bit 3 without bit 1); a sender writes them only to a receiver whose `DataCredit` said `tuples: true` (every credit of this build; a receiver from before gets such batches as msgpack). `test/vectors/batches/` pins a batch of bids both ways, a batch of window results with constants, and a batch of partials as tuples.",
    '',
    'A `DataBatch` frame is written with its batch encoded in place after a 9-byte head (`[u32 frame length][u8 201][u32 batch length]`): the bytes `encodeFrame` gives, without copying the batch into a frame.',
    '',
    '## Channels: on a link, or a connection each',
    '',
    "A channel (one edge, one upstream subtask, one downstream subtask) speaks the same frames whatever carries it: the sender's `DataHello` names it; the receiver grants `DataCredit` (4 batches at first, then the credits of the batches its task has taken, in grants of half the channel's credits: 2 of 4, 1 for a channel of 1 or 2; while the sender waits for credit, fewer than half are held back and the rest are batches waiting at the receiver, so the sender is never left without credit); the sender's `DataBatch`, `DataWatermark`, `DataStatus` and `DataBarrier` follow in order, and `DataEnd` closes it.",
    '',
    "A link carries every channel between two processes as `LinkFrame`s: `channel` is numbered by the side that opened the channel, `fromOpener` says which end wrote it (true: the sender's frames, or `DataRefused` when the sender stops early, its job cancelled or failed, so the receiver forgets the channel; false: the receiver's `DataCredit`, or `DataRefused` when it turns the channel away or cuts off a sender over its credits), and `frame` is the data-plane message without its length prefix. Credits stay per channel, so a slow receiver holds back its own sender and never the link. A link's loss fails every channel on it that has not ended. Frames written to one link in one turn of the event loop (a batch, the watermark after it, credits returned) go out in one write.",
    '',
    "In a cluster (design record 019) a worker dials one data link to each peer data port its channels go to, the first time it opens a channel there, and sends every later channel to that port on it. The link has no hello of its own: its first frame is a `LinkFrame` carrying the first channel's `DataHello`, which must name a subtask the receiver runs and prove the attempt's secret (`mac`), or the receiver closes the link, as it would that channel's connection; each later channel proves its own. A link carries channels one way (the dialler's); credits and refusals come back on it. A receiver takes links only if its `SubtaskListening` said `dataLinks: true`, and the coordinator passes that on as each `PeerAddress.link`; a sender opens a connection per channel to a peer that did not say so (a worker from before links, or one started with `--data-transport channel`), whose first frame is the channel's `DataHello` and which the receiver refuses by closing it.",
    '',
    'In a mesh run (design record 017) two members share exactly one link, opened by the higher member with `MeshLinkHello`; it carries channels both ways.',
    '',
    "## A mesh run's control connection",
    '',
    "After `MeshRegister` / `MeshMembers` the leader keeps each member's control connection for the run: each member deploys its own slice and sends `MeshReady`; the leader sends `MeshStart` once all have. The leader then sends the coordinator's checkpoint frames (`TriggerCheckpoint`, `CommitCheckpoint`, `AbortCheckpoint`, `FinalCheckpointAssigned`) and members answer with the worker's (`SubtaskCheckpointed`, `RequestFinalCheckpoint`, `SubtaskFinished`). Both ends send `MeshHeartbeat` every second. `MeshStop` ends the run: from the leader to every member (ok, or failed with the cause), or from a member reporting a failure it saw (a lost link).",
    '',
  );
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(new URL('../docs/protocol.md', import.meta.url), renderProtocolDoc());
}
