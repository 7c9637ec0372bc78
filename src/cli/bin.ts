import { main } from './index.js';

process.exitCode = await main(process.argv);
