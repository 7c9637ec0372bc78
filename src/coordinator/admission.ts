/**
 * The admission policy: what a connection beyond max_pending_connections does (after the reference's
 * choose_admission_to_evict, with a fair share per address). An admission lasts from the accept until
 * its first frame is in; only one that has got least far (nothing received) is ever evicted.
 *
 * 1. Below the cap everyone is admitted.
 * 2. An address holding its fair share already (the cap divided among the addresses admitting, the
 *    newcomer's included, rounded up) makes room from its own admissions: its oldest silent one is
 *    evicted, or, when all of its own are further along, the newcomer is refused.
 * 3. A newcomer under its share is admitted past the cap, up to three times it, so one host's flood
 *    never turns away a worker from another.
 * 4. At three times the cap it evicts the oldest silent admission of the busiest address; when none is
 *    silent, everything is refused (the hard ceiling).
 *
 * So a flood of silent connections, from one host or from many, evicts its own, and `clink jobs` or a
 * worker's registration gets in at once.
 */

/** How far an admission has got: 0 accepted, nothing received; 1 its first frame begun. */
export type AdmissionStage = 0 | 1;

export interface PendingAdmission {
  id: number;
  /** The peer's address (an IPv6 peer counts by its /64). */
  address: string;
  stage: AdmissionStage;
  acceptedAt: number;
}

export type AdmissionVerdict =
  { kind: 'admit' } | { kind: 'evict'; victim: PendingAdmission } | { kind: 'refuse'; reason: string };

/** The address key admissions are counted by: an IPv6 address by its first four groups (/64). */
export function addressKey(address: string | undefined): string {
  if (!address) return '?';
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('::');
  const groups = head.split(':').filter(Boolean);
  const fill = 8 - groups.length - (tail ? tail.split(':').length : 0);
  const all = address.includes('::')
    ? [...groups, ...Array<string>(Math.max(0, fill)).fill('0'), ...(tail ? tail.split(':') : [])]
    : address.split(':');
  return `${all.slice(0, 4).join(':')}::/64`;
}

/** Decide for a newcomer from `address` given the admissions in progress. */
export function admissionVerdict(pending: readonly PendingAdmission[], address: string, cap: number): AdmissionVerdict {
  const limit = Math.max(1, cap);
  if (pending.length < limit) return { kind: 'admit' };
  const byAddress = new Map<string, PendingAdmission[]>();
  for (const p of pending) (byAddress.get(p.address) ?? byAddress.set(p.address, []).get(p.address)!).push(p);
  const own = byAddress.get(address) ?? [];
  const addresses = byAddress.size + (own.length === 0 ? 1 : 0);
  const share = Math.ceil(limit / addresses);
  if (own.length >= share) {
    const victim = leastAdvanced(own);
    return victim
      ? { kind: 'evict', victim }
      : {
          kind: 'refuse',
          reason: `${address} holds ${own.length} of the ${pending.length} connections being admitted (its share of --max-pending-connections ${limit}), each with its first frame under way`,
        };
  }
  if (pending.length < 3 * limit) return { kind: 'admit' };
  let busiest: PendingAdmission[] = [];
  for (const list of byAddress.values()) if (list.length > busiest.length) busiest = list;
  const victim = leastAdvanced(busiest);
  return victim
    ? { kind: 'evict', victim }
    : {
        kind: 'refuse',
        reason: `${pending.length} connections are being admitted (three times --max-pending-connections ${limit}), each with its first frame under way`,
      };
}

/** The oldest admission of `list` that has received nothing, if any. */
function leastAdvanced(list: readonly PendingAdmission[]): PendingAdmission | undefined {
  return list.filter((p) => p.stage === 0).sort((a, b) => a.acceptedAt - b.acceptedAt || a.id - b.id)[0];
}

/**
 * Log lines about refusals and evictions, rate-limited: a flood makes thousands, and the counters are
 * the precise record. Five lines in full per window, then one summary of what was left out.
 */
export class AdmissionLogLimiter {
  private windowStart = 0;
  private inWindow = 0;
  private suppressed = 0;

  constructor(
    private readonly log: { warn(msg: string): void },
    private readonly perWindow = 5,
    private readonly windowMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  warn(msg: string): void {
    const t = this.now();
    if (t - this.windowStart >= this.windowMs) {
      if (this.suppressed > 0)
        this.log.warn(
          `${this.suppressed} more admission refusals or evictions in the last ${Math.round((t - this.windowStart) / 1000)} s were not logged`,
        );
      this.windowStart = t;
      this.inWindow = 0;
      this.suppressed = 0;
    }
    if (this.inWindow++ < this.perWindow) this.log.warn(msg);
    else this.suppressed++;
  }
}
