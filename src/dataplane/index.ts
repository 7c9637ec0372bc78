/**
 * The data plane between worker processes: a DataServer per worker (or job thread) receives channels
 * into subtask input queues and opens its channels to other workers, every channel to one peer on one
 * data link (or a connection per channel, to a peer that takes no links); a LinkPlane carries every
 * channel between two members of a mesh run over their one link. Both multiplex with a LinkMux. A
 * RemoteChannel sends one channel over any of them. Subtasks in the same process skip it: their edge is
 * a pointer pass into the downstream InputQueue.
 *
 * @example
 * const server = await DataServer.start({ host: '127.0.0.1' });
 * server.register(jobId, attempt, taskId, subtask, { queue, channelOf });
 */
export { DataServer, type ChannelOpen, type DataPlane, type DataServerOptions, type DataTransport } from './server.js';
export { DEFAULT_CHANNEL_CREDITS, type ChannelLabels, type InboundTarget } from './inbound.js';
export { LinkPlane, type LinkPlaneOptions } from './link-plane.js';
export { linkFrameHeader } from './link-mux.js';
export { RemoteChannel, tcpTransport } from './remote-channel.js';
export { elementFrame, frameElement } from './frames.js';
export { helloMac, helloMacValid } from './hello-mac.js';
