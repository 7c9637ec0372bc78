/** `clink node`: the flags of a coordinator or worker node, checked (the lint's node checks), and handed to start-node.ts. */
import { type Command, Option } from 'commander';
import { givenNodeFlags, nodeFlagsOf, nodeOptions } from './node-flag-table.js';

/** Add the `node` command; its exit code (0 after a graceful stop) goes to `setExitCode`. */
export function addNodeCommand(program: Command, setExitCode: (code: number) => void): void {
  const cmd = program
    .command('node')
    .description('run a cluster node: a coordinator or a worker')
    .addOption(
      new Option('--role <role>', 'what this node is').choices(['coordinator', 'worker']).makeOptionMandatory(),
    );
  for (const n of nodeOptions()) cmd.addOption(n.option);
  cmd.action(async (o: Record<string, unknown>, cmd: Command) => {
    const role = o.role as 'coordinator' | 'worker';
    // The same checks `clink lint` runs: an error refuses the start (exit 2), each warning is logged at start.
    const [{ nodeFindings }, { errorsOf }] = await Promise.all([import('./node-lint.js'), import('../lint/index.js')]);
    const { findings, exposureWarning } = nodeFindings(role, o, givenNodeFlags(cmd));
    const errors = errorsOf(findings);
    if (errors.length > 0) cmd.error(errors.map((f) => `error: ${f.message}`).join('\n'));
    const { nodeCommand } = await import('./start-node.js');
    setExitCode(
      await nodeCommand({
        ...nodeFlagsOf(o),
        ...(exposureWarning ? { exposureWarning } : {}),
        configWarnings: findings.map(({ check, message }) => ({ check, message })),
      }),
    );
  });
}
