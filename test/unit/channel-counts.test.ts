// A channel's records and bytes are counted as plain numbers on the data path and reach the labelled
// counters when the metrics are read: exact on every read, never twice, one count per label set.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClinkMetrics } from '../../src/metrics/index.js';

const labels = (to: string) => ({ job: 'j1', edge: '0', from: 'src#0', to });

async function value(m: ClinkMetrics, name: string, to: string): Promise<number | undefined> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (metric?.values as { labels: Record<string, string>; value: number }[] | undefined)?.find(
    (v) => v.labels.to === to,
  )?.value;
}

test('counts reach the counters when read, each increase once; channels under the same labels share a count', async () => {
  const m = new ClinkMetrics();
  const a = m.channelSent.of(labels('sink#0'));
  a.add(1_000, 8_040);
  a.add(10, 120);
  assert.equal(await value(m, 'clink_channel_records_sent_total', 'sink#0'), 1_010);
  assert.equal(await value(m, 'clink_channel_bytes_sent_total', 'sink#0'), 8_160);
  assert.equal(await value(m, 'clink_channel_records_sent_total', 'sink#0'), 1_010, 'a second read adds nothing');
  const again = m.channelSent.of(labels('sink#0'));
  assert.equal(again, a, 'a redeploy under the same labels adds to the same count');
  again.add(5, 50);
  m.channelSent.of(labels('sink#1')).add(7, 70);
  const text = await m.registry.metrics();
  assert.match(text, /clink_channel_records_sent_total\{job="j1",edge="0",from="src#0",to="sink#0"\} 1015\n/);
  assert.match(text, /clink_channel_records_sent_total\{job="j1",edge="0",from="src#0",to="sink#1"\} 7\n/);
  assert.match(text, /clink_channel_bytes_sent_total\{job="j1",edge="0",from="src#0",to="sink#1"\} 70\n/);
  m.channelReceived.of(labels('sink#0')).add(3, 30);
  assert.equal(await value(m, 'clink_channel_records_received_total', 'sink#0'), 3);
  assert.equal(
    await value(m, 'clink_channel_records_sent_total', 'sink#0'),
    1_015,
    'received counts are apart from sent ones',
  );
});
