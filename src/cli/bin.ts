import { main } from './index.js';

const code = await main(process.argv);
process.exitCode = code;
// A node that has stopped exits now, even if a cancelled task still holds a handle.
if (process.argv[2] === 'node') setTimeout(() => process.exit(code), 1_000).unref();
