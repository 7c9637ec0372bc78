/**
 * Waiting for slots: a placement that does not fit waits for capacity to change (a worker registers,
 * a slot comes free), for its give-up condition, or for its deadline, on events rather than a poll; a
 * backoff wait is cut short when the coordinator stops.
 */
import { Waiters, type Clock } from '../util/index.js';
import { freeSlots, type WorkerSession } from './job-state.js';
import { assignTaskPlacement, NotEnoughSlotsError, type PlacementPlan, type PlacementSubtask } from './placement.js';

export interface SlotWaiterDeps {
  clock: Clock;
  /** Workers with a live session. */
  active: () => WorkerSession[];
  /** When a worker last registered. */
  lastRegistrationAt: () => number;
}

export interface PlaceOptions {
  /** Give up (throwing the refusal) as soon as this says so. */
  giveUp?: () => boolean;
  /** A worker registering while this waits gives it `waitMs` again (a restart waiting for its workers). */
  registrationRestartsClock?: boolean;
  /** What the job's need is made of, for the refusal. */
  detail?: string;
}

export class SlotWaiter {
  /** Backoff waits that stop() cuts short. */
  private readonly stopWaiters = new Waiters();
  /** Placements waiting for slots. */
  private readonly capacityWaiters = new Waiters();
  private stopped = false;

  constructor(private readonly deps: SlotWaiterDeps) {}

  /** Wait `ms`, cut short by stop(). */
  wait(ms: number): Promise<void> {
    return this.stopWaiters.wait(this.deps.clock, ms);
  }

  /**
   * Capacity may have changed, or a waiter's give-up condition may now hold (a job ended or failed):
   * every waiting placement looks again.
   */
  capacityChanged(): void {
    this.capacityWaiters.wake();
  }

  /** Place `subtasks` of job `jobId`, waiting up to `waitMs` for slots; throws NotEnoughSlotsError after. */
  async place(
    jobId: string,
    subtasks: PlacementSubtask[],
    waitMs: number,
    options: PlaceOptions = {},
  ): Promise<PlacementPlan> {
    const { clock } = this.deps;
    const started = clock.now();
    const prefix = `${jobId}/`;
    // Slots this job still holds on a worker (survivors of a retried region) take its subtasks for free.
    const holds = (s: WorkerSession): Set<string> =>
      new Set([...s.slotShares.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)));
    for (;;) {
      const deadline =
        (options.registrationRestartsClock ? Math.max(started, this.deps.lastRegistrationAt()) : started) + waitMs;
      const active = this.deps.active();
      const total = active.reduce((n, s) => n + s.slots, 0);
      try {
        return assignTaskPlacement(
          subtasks,
          active.map((s) => ({ id: s.id, freeSlots: freeSlots(s), holds: holds(s) })),
          total,
          options.detail ?? '',
        );
      } catch (err) {
        if (!(err instanceof NotEnoughSlotsError) || clock.now() >= deadline || this.stopped || options.giveUp?.())
          throw err;
        await this.capacityWaiters.wait(clock, Math.max(1, deadline - clock.now()));
      }
    }
  }

  /**
   * Resolves once no worker has registered for `stableMs` (counted from now at the earliest), or after
   * `maxMs`, or on stop: a takeover lets the reconnecting workers arrive before it places anything.
   */
  async settle(stableMs: number, maxMs: number): Promise<void> {
    const { clock } = this.deps;
    const started = clock.now();
    const deadline = started + maxMs;
    for (;;) {
      const quietAt = Math.max(started, this.deps.lastRegistrationAt()) + stableMs;
      const now = clock.now();
      if (now >= quietAt || now >= deadline || this.stopped) return;
      await this.capacityWaiters.wait(clock, Math.min(quietAt, deadline) - now);
    }
  }

  /** Every wait ends now, and placements give up. */
  stop(): void {
    this.stopped = true;
    this.stopWaiters.wake();
    this.capacityChanged();
  }
}
