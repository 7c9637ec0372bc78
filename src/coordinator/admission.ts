/**
 * The admission policy: what a connection beyond max_pending_connections does (after the reference's
 * choose_admission_to_evict). An admission lasts from the accept until its first frame is in.
 *
 * The peer address holding the most admissions gives way first, and within it the admission that has
 * got least far (nothing received, then a first frame begun), oldest first. A newcomer has received
 * nothing, so it evicts only an admission that has not got further either; when every admission of
 * the busiest address is further along, the newcomer is refused. A newcomer from an address holding
 * no admission is admitted past the cap, so one host's queue never turns away a worker from another,
 * up to twice the cap, where everything is refused. So a flood of silent connections from one host
 * evicts that host's own, and `clink jobs` or a worker's registration still gets in.
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

export type AdmissionVerdict = { kind: 'admit' } | { kind: 'evict'; victim: PendingAdmission } | { kind: 'refuse'; reason: string };

/** The address key admissions are counted by: an IPv6 address by its first four groups (/64). */
export function addressKey(address: string | undefined): string {
  if (!address) return '?';
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('::');
  const groups = head.split(':').filter(Boolean);
  const fill = 8 - groups.length - (tail ? tail.split(':').length : 0);
  const all = address.includes('::') ? [...groups, ...Array<string>(Math.max(0, fill)).fill('0'), ...(tail ? tail.split(':') : [])] : address.split(':');
  return `${all.slice(0, 4).join(':')}::/64`;
}

/** Decide for a newcomer from `address` given the admissions in progress. */
export function admissionVerdict(pending: readonly PendingAdmission[], address: string, cap: number): AdmissionVerdict {
  const limit = Math.max(1, cap);
  if (pending.length < limit) return { kind: 'admit' };
  if (pending.length >= 2 * limit) return { kind: 'refuse', reason: `${pending.length} connections are being admitted (twice --max-pending-connections ${limit})` };
  const byAddress = new Map<string, PendingAdmission[]>();
  for (const p of pending) (byAddress.get(p.address) ?? byAddress.set(p.address, []).get(p.address)!).push(p);
  if (!byAddress.has(address)) return { kind: 'admit' };
  let busiest: PendingAdmission[] = [];
  for (const list of byAddress.values()) if (list.length > busiest.length) busiest = list;
  // Only the busiest address gives way; the newcomer's own address must be it (or tie with it).
  const own = byAddress.get(address)!;
  const from = own.length === busiest.length ? own : busiest;
  const silent = from.filter((p) => p.stage === 0).sort((a, b) => a.acceptedAt - b.acceptedAt || a.id - b.id);
  if (silent.length > 0) return { kind: 'evict', victim: silent[0]! };
  return { kind: 'refuse', reason: `${pending.length} connections are being admitted, each with its first frame under way` };
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
      if (this.suppressed > 0) this.log.warn(`${this.suppressed} more admission refusals or evictions in the last ${Math.round((t - this.windowStart) / 1000)} s were not logged`);
      this.windowStart = t;
      this.inWindow = 0;
      this.suppressed = 0;
    }
    if (this.inWindow++ < this.perWindow) this.log.warn(msg);
    else this.suppressed++;
  }
}
