/**
 * The data plane between worker processes: a DataServer per worker receives channels into subtask
 * input queues, one connection per channel; a LinkPlane carries every channel between two processes
 * over their one link (a mesh run). A RemoteChannel sends one channel over either. Subtasks in the same
 * process skip it: their edge is a pointer pass into the downstream InputQueue.
 *
 * @example
 * const server = await DataServer.start({ host: '127.0.0.1' });
 * server.register(jobId, attempt, taskId, subtask, { queue, channelOf });
 */
export { DataServer, type DataPlane, type DataServerOptions } from './server.js';
export { DEFAULT_CHANNEL_CREDITS, type ChannelLabels, type InboundTarget } from './inbound.js';
export { LinkPlane, linkFrameHeader, type LinkPlaneOptions } from './link-plane.js';
export { RemoteChannel, tcpTransport } from './remote-channel.js';
export { elementFrame, frameElement } from './frames.js';
export { helloMac, helloMacValid } from './hello-mac.js';
