/**
 * The Nexmark event generator, after the model of Beam's and Flink's nexmark suites: people, auctions
 * and bids interleaved 1:3:46 out of every 50 events, ids that grow with the event number, half the
 * bids on a "hot" auction and three quarters from a "hot" bidder, prices log-uniform from $1 to $1,000,000,
 * event time advancing `1 / eventsPerSecond` per event from `baseTimeMs`, and each event padded with
 * an `extra` string to the suite's average sizes (people 200 bytes, auctions 500, bids 100).
 *
 * Event `n` is a pure function of (seed, n): a small PRNG is seeded from both for each event, as Beam
 * seeds a `Random` with the event id. So the events are the same in every process and at any
 * parallelism, and a reader split over subtasks (subtask s of p takes n = s, s+p, ...) yields, all
 * together, exactly the single generator's stream.
 */

export interface Person {
  kind: 'person';
  id: number;
  name: string;
  emailAddress: string;
  creditCard: string;
  city: string;
  state: string;
  dateTime: number;
  extra: string;
}

export interface Auction {
  kind: 'auction';
  id: number;
  itemName: string;
  description: string;
  initialBid: number;
  reserve: number;
  dateTime: number;
  expires: number;
  seller: number;
  category: number;
  extra: string;
}

export interface Bid {
  kind: 'bid';
  auction: number;
  bidder: number;
  /** In cents. */
  price: number;
  channel: string;
  url: string;
  dateTime: number;
  extra: string;
}

export type NexmarkEvent = Person | Auction | Bid;

export interface NexmarkConfig {
  seed: number;
  /** Event time advances by 1000 / eventsPerSecond ms per event. */
  eventsPerSecond: number;
  /** Event time of event 0. */
  baseTimeMs: number;
}

export const PERSON_PROPORTION = 1;
export const AUCTION_PROPORTION = 3;
export const BID_PROPORTION = 46;
export const PROPORTION_DENOMINATOR = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;
export const FIRST_PERSON_ID = 1000;
export const FIRST_AUCTION_ID = 1000;
export const FIRST_CATEGORY_ID = 10;
export const NUM_CATEGORIES = 5;
/** 2026-01-01T00:00:00Z: event time is deterministic unless a base time is given. */
export const DEFAULT_BASE_TIME_MS = 1_767_225_600_000;

const NUM_ACTIVE_PEOPLE = 1000;
const NUM_IN_FLIGHT_AUCTIONS = 100;
const PERSON_ID_LEAD = 10;
const AUCTION_ID_LEAD = 10;
/** One in HOT_x_RATIO draws picks from the whole range; the rest pick the current hot one. */
const HOT_AUCTION_RATIO = 2;
const HOT_SELLER_RATIO = 4;
const HOT_BIDDER_RATIO = 4;
/** Hot auctions and people are the most recent multiple of this. */
const HOT_STRIDE = 100;
const HOT_CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];
const HOT_URLS = HOT_CHANNELS.map((c) => `https://www.nexmark.com/${c.toLowerCase()}/item.htm?query=1`);
const CHANNELS = 10_000;
const US_STATES = ['AZ', 'CA', 'ID', 'OR', 'WA', 'WY'];
const US_CITIES = [
  'Phoenix',
  'Los Angeles',
  'San Francisco',
  'Boise',
  'Portland',
  'Bend',
  'Redmond',
  'Seattle',
  'Kent',
  'Cheyenne',
];
const FIRST_NAMES = ['Peter', 'Paul', 'Luke', 'John', 'Saul', 'Vicky', 'Kate', 'Julie', 'Sarah', 'Deiter', 'Walter'];
const LAST_NAMES = ['Shultz', 'Abrams', 'Spencer', 'White', 'Bartels', 'Walton', 'Smith', 'Jones', 'Noris'];
/** Average sizes the `extra` field pads each event towards, as the suite sets them. */
const AVG_PERSON_BYTES = 200;
const AVG_AUCTION_BYTES = 500;
const AVG_BID_BYTES = 100;

/** A tiny PRNG (mulberry32) reseeded per event; `next()` is uniform in [0, 2^32). */
class EventRandom {
  private s = 0;

  reset(seed: number, n: number): void {
    let h = (seed ^ Math.imul(n | 0, 0x9e3779b1) ^ Math.imul((n / 4294967296) | 0, 0x85ebca77)) | 0;
    h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
    h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
    this.s = (h ^ (h >>> 16)) | 0;
  }

  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, bound), bound < 2^32. */
  int(bound: number): number {
    return Math.floor((this.next() / 4294967296) * bound);
  }

  /** Uniform in [0, 1). */
  double(): number {
    return this.next() / 4294967296;
  }
}

/** Random lowercase text that strings are sliced from: a fresh string per event at the cost of a slice. */
const TEXT = ((): string => {
  const r = new EventRandom();
  r.reset(0x6e65786d, 0);
  const chars: string[] = [];
  for (let i = 0; i < 1 << 16; i++) chars.push(String.fromCharCode(97 + r.int(26)));
  return chars.join('');
})();

function text(r: EventRandom, length: number): string {
  const at = r.int(TEXT.length - length);
  return TEXT.slice(at, at + length);
}

/** Pads an event of `currentSize` towards `averageSize` bytes (±20 %), as the suite's nextExtra does. */
function extra(r: EventRandom, currentSize: number, averageSize: number): string {
  if (currentSize > averageSize) return '';
  const desired = averageSize - currentSize;
  const delta = Math.round(desired * 0.2);
  return text(r, desired - delta + r.int(2 * delta + 1));
}

const CHANNEL_NAMES = Array.from({ length: CHANNELS }, (_, i) => `channel-${i}`);
const CHANNEL_URLS = CHANNEL_NAMES.map(
  (_, i) => `https://www.nexmark.com/${TEXT.slice(i % 60_000, (i % 60_000) + 5)}/item.htm?query=1&channel_id=${i}`,
);

/** The kind of event `n`: 0 person, 1 auction, 2 bid. */
export function eventKind(n: number): 0 | 1 | 2 {
  const rem = n % PROPORTION_DENOMINATOR;
  return rem < PERSON_PROPORTION ? 0 : rem < PERSON_PROPORTION + AUCTION_PROPORTION ? 1 : 2;
}

/** The base-0 id of the last person created at or before event `n`. */
export function lastBase0PersonId(n: number): number {
  const epoch = Math.floor(n / PROPORTION_DENOMINATOR);
  let offset = n % PROPORTION_DENOMINATOR;
  if (offset >= PERSON_PROPORTION) offset = PERSON_PROPORTION - 1;
  return epoch * PERSON_PROPORTION + offset;
}

/** The base-0 id of the last auction created at or before event `n` (-1 before the first). */
export function lastBase0AuctionId(n: number): number {
  let epoch = Math.floor(n / PROPORTION_DENOMINATOR);
  let offset = n % PROPORTION_DENOMINATOR;
  if (offset < PERSON_PROPORTION) {
    epoch--;
    offset = AUCTION_PROPORTION - 1;
  } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) offset = AUCTION_PROPORTION - 1;
  else offset -= PERSON_PROPORTION;
  return epoch * AUCTION_PROPORTION + offset;
}

/** A recently created person, or one about to be (ids run up to PERSON_ID_LEAD ahead). */
function nextBase0PersonId(r: EventRandom, n: number): number {
  const people = lastBase0PersonId(n) + 1;
  const active = Math.min(people, NUM_ACTIVE_PEOPLE);
  return people - active + r.int(active + PERSON_ID_LEAD);
}

/** An auction among the last NUM_IN_FLIGHT_AUCTIONS, or one about to be created. */
function nextBase0AuctionId(r: EventRandom, n: number): number {
  const max = lastBase0AuctionId(n);
  const min = Math.max(max - NUM_IN_FLIGHT_AUCTIONS, 0);
  return min + r.int(max - min + 1 + AUCTION_ID_LEAD);
}

/**
 * Log-uniform from 100 cents to 100,000,000 ($1 to $1,000,000), as the suite draws them:
 * round(10^(6u) * 100). Math.exp is several times cheaper than Math.pow here, and off from it by under
 * 3e-15 relatively (2.5e-7 at the top of the range), so both round alike unless the value lies within
 * 1e-5 of a half: there (about 2 draws in 100 000) the price is Math.pow's, so the events never change.
 */
function price(r: EventRandom): number {
  return priceOf(r.double());
}

/** The price a uniform draw `u` in [0, 1) gives (exported for its test against Math.pow). */
export function priceOf(u: number): number {
  const x = u * 6;
  const y = Math.exp(x * Math.LN10) * 100;
  const f = y - Math.floor(y);
  return f > 0.5 - 1e-5 && f < 0.5 + 1e-5 ? Math.round(Math.pow(10, x) * 100) : Math.round(y);
}

export class NexmarkGenerator {
  private readonly r = new EventRandom();
  private readonly usPerEvent: number;

  constructor(readonly config: NexmarkConfig) {
    this.usPerEvent = 1_000_000 / config.eventsPerSecond;
  }

  /** Event time of event `n`. */
  timestampOf(n: number): number {
    return this.config.baseTimeMs + Math.floor((n * this.usPerEvent) / 1000);
  }

  /** Event `n`. */
  event(n: number): NexmarkEvent {
    this.r.reset(this.config.seed, n);
    const kind = eventKind(n);
    return kind === 2 ? this.bid(n) : kind === 1 ? this.auction(n) : this.person(n);
  }

  private person(n: number): Person {
    const r = this.r;
    const name = `${FIRST_NAMES[r.int(FIRST_NAMES.length)]!} ${LAST_NAMES[r.int(LAST_NAMES.length)]!}`;
    const emailAddress = `${text(r, 7)}@${text(r, 5)}.com`;
    const creditCard = `${1000 + r.int(9000)} ${1000 + r.int(9000)} ${1000 + r.int(9000)} ${1000 + r.int(9000)}`;
    const city = US_CITIES[r.int(US_CITIES.length)]!;
    const state = US_STATES[r.int(US_STATES.length)]!;
    const size = 8 + name.length + emailAddress.length + creditCard.length + city.length + state.length + 8;
    return {
      kind: 'person',
      id: lastBase0PersonId(n) + FIRST_PERSON_ID,
      name,
      emailAddress,
      creditCard,
      city,
      state,
      dateTime: this.timestampOf(n),
      extra: extra(r, size, AVG_PERSON_BYTES),
    };
  }

  private auction(n: number): Auction {
    const r = this.r;
    const dateTime = this.timestampOf(n);
    const seller =
      r.int(HOT_SELLER_RATIO) > 0
        ? Math.floor(lastBase0PersonId(n) / HOT_STRIDE) * HOT_STRIDE
        : nextBase0PersonId(r, n);
    const category = FIRST_CATEGORY_ID + r.int(NUM_CATEGORIES);
    const initialBid = price(r);
    const itemName = text(r, 20);
    const description = text(r, 100);
    const reserve = initialBid + price(r);
    // An auction runs until about the time NUM_IN_FLIGHT_AUCTIONS more auctions have been created.
    const horizonMs =
      this.timestampOf(n + Math.floor((NUM_IN_FLIGHT_AUCTIONS * PROPORTION_DENOMINATOR) / AUCTION_PROPORTION)) -
      dateTime;
    const expires = dateTime + 1 + r.int(Math.max(horizonMs * 2, 1));
    return {
      kind: 'auction',
      id: lastBase0AuctionId(n) + FIRST_AUCTION_ID,
      itemName,
      description,
      initialBid,
      reserve,
      dateTime,
      expires,
      seller: seller + FIRST_PERSON_ID,
      category,
      extra: extra(r, 8 * 6 + itemName.length + description.length, AVG_AUCTION_BYTES),
    };
  }

  private bid(n: number): Bid {
    const r = this.r;
    const auction =
      r.int(HOT_AUCTION_RATIO) > 0
        ? Math.floor(lastBase0AuctionId(n) / HOT_STRIDE) * HOT_STRIDE
        : nextBase0AuctionId(r, n);
    const bidder =
      r.int(HOT_BIDDER_RATIO) > 0
        ? Math.floor(lastBase0PersonId(n) / HOT_STRIDE) * HOT_STRIDE + 1
        : nextBase0PersonId(r, n);
    const p = price(r);
    let channel: string;
    let url: string;
    if (r.int(2) > 0) {
      const i = r.int(HOT_CHANNELS.length);
      channel = HOT_CHANNELS[i]!;
      url = HOT_URLS[i]!;
    } else {
      const i = r.int(CHANNELS);
      channel = CHANNEL_NAMES[i]!;
      url = CHANNEL_URLS[i]!;
    }
    return {
      kind: 'bid',
      auction: Math.max(auction, 0) + FIRST_AUCTION_ID,
      bidder: bidder + FIRST_PERSON_ID,
      price: p,
      channel,
      url,
      dateTime: this.timestampOf(n),
      extra: extra(r, 32, AVG_BID_BYTES),
    };
  }
}
