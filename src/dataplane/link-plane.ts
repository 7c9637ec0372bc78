/**
 * LinkPlane: a mesh run's data plane, over one full-duplex link per pair of members (design record
 * 017). Every channel between two members shares their link (link-mux.ts); the links are given, opened
 * by the mesh before the run, and a channel to an address with no link fails at once.
 */
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import type { FrameConnection } from '../net/index.js';
import { InboundTargets, type InboundTarget } from './inbound.js';
import { LinkMux, type Link } from './link-mux.js';
import { RemoteChannel } from './remote-channel.js';
import type { ChannelOpen, DataPlane } from './server.js';

export interface LinkPlaneOptions {
  /** The link to each peer process, by the address its channels are opened to (`host:port`). */
  links: ReadonlyMap<string, FrameConnection>;
  /** This process's own port in those addresses (what SubtaskListening reports). */
  port: number;
  /** @default DEFAULT_CHANNEL_CREDITS */
  credits?: number;
  log?: Logger;
  metrics?: ClinkMetrics;
}

export class LinkPlane implements DataPlane {
  private readonly targets: InboundTargets;
  private readonly mux: LinkMux;
  private readonly links = new Map<string, Link>();
  readonly port: number;
  /** Every channel of a mesh travels on a link. */
  readonly takesLinks = true;

  constructor(options: LinkPlaneOptions) {
    this.port = options.port;
    this.targets = new InboundTargets(options.metrics);
    this.mux = new LinkMux({ targets: this.targets, noun: 'mesh link', ...pick(options) });
    for (const [address, conn] of options.links) this.links.set(address, this.mux.attach(address, conn));
  }

  register(jobId: string, attempt: number, taskId: string, subtask: number, target: InboundTarget): void {
    this.targets.register(jobId, attempt, taskId, subtask, target);
  }

  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void {
    this.targets.unregister(jobId, attempt, taskId, subtask);
  }

  open(o: ChannelOpen): RemoteChannel {
    const address = `${o.host}:${o.port}`;
    return new RemoteChannel(
      (events) => this.mux.open(this.links.get(address), `${address} (not a member of this run)`, o.hello, events),
      o.onError,
      o.metrics,
      o.labels,
    );
  }

  /** Close every link. */
  close(): void {
    this.mux.close();
  }
}

function pick(o: LinkPlaneOptions): { credits?: number; log?: Logger; metrics?: ClinkMetrics } {
  return {
    ...(o.credits !== undefined ? { credits: o.credits } : {}),
    ...(o.log ? { log: o.log } : {}),
    ...(o.metrics ? { metrics: o.metrics } : {}),
  };
}
