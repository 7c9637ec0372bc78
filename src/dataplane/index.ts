/**
 * The data plane between worker processes: a DataServer per worker receives channels into subtask
 * input queues; a RemoteChannel sends one. Subtasks in the same process skip it: their edge is a
 * pointer pass into the downstream InputQueue.
 *
 * @example
 * const server = await DataServer.start({ host: '127.0.0.1' });
 * server.register(jobId, attempt, taskId, subtask, { queue, channelOf });
 */
export { DataServer, DEFAULT_CHANNEL_CREDITS, type DataServerOptions, type InboundTarget } from './server.js';
export { RemoteChannel, type ChannelLabels } from './remote-channel.js';
export { elementFrame, frameElement } from './frames.js';
export { helloMac, helloMacValid } from './hello-mac.js';
