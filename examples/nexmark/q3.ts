/**
 * Nexmark q3, local item suggestion: who is selling in category 10 from Oregon, Idaho or California.
 * A streaming inner join of auctions with their sellers, keyed by person id: each side waits in keyed
 * state for the other (a seller may appear before or after their auctions).
 */
import { defineJob, type Auction, type Person } from 'clink';
import { isAuction, isPerson, nexmarkEvents, output } from './common.js';

export interface Q3Row {
  name: string;
  city: string;
  state: string;
  id: number;
}

const STATES = new Set(['OR', 'ID', 'CA']);

export default defineJob({ name: 'nexmark-q3', version: '1', description: 'local item suggestion' }, (env) => {
  const events = nexmarkEvents(env);
  const auctions = events.filter(isAuction).filter((a) => a.category === 10);
  const persons = events.filter(isPerson).filter((p) => STATES.has(p.state));
  const rows = auctions
    .connect(persons)
    .keyBy(
      (a) => a.seller,
      (p) => p.id,
    )
    .process<Q3Row>({
      processElement1(a: Auction, ctx, out) {
        const seller = ctx.state.value<Person>('person').value();
        if (seller) out.collect({ name: seller.name, city: seller.city, state: seller.state, id: a.id });
        else ctx.state.list<number>('auctions').add(a.id);
      },
      processElement2(p: Person, ctx, out) {
        ctx.state.value<Person>('person').update({ ...p, extra: '' });
        const waiting = ctx.state.list<number>('auctions');
        for (const id of waiting.get()) out.collect({ name: p.name, city: p.city, state: p.state, id });
        waiting.clear();
      },
    })
    .name('join sellers');
  output(env, rows, 'q3');
});
