/**
 * Nexmark q8, monitor new users: the people who opened an auction in the same 10-second window in
 * which they registered. A window join of people and auctions on person id = seller, then one row per
 * person and window however many auctions they opened.
 */
import { defineJob, Windows } from 'clink';
import { isAuction, isPerson, nexmarkEvents, output } from './common.js';

export interface Q8Row {
  id: number;
  name: string;
  start: number;
}

export const WINDOW_MS = 10_000;

export default defineJob({ name: 'nexmark-q8', version: '1', description: 'monitor new users' }, (env) => {
  const events = nexmarkEvents(env).assignTimestamps((e) => e.dateTime);
  const joined = events
    .filter(isPerson)
    .join(events.filter(isAuction))
    .where((p) => p.id)
    .equalTo((a) => a.seller)
    .window(Windows.tumbling(WINDOW_MS))
    .apply((p, _a, window): Q8Row => ({ id: p.id, name: p.name, start: window.start }))
    .name('people x auctions');
  const once = joined
    .keyBy((r) => `${r.id}/${r.start}`)
    .window(Windows.tumbling(WINDOW_MS))
    .reduce((a) => a)
    .name('one per person and window');
  output(env, once, 'q8');
});
