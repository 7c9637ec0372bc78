import type { Rule } from 'eslint';

declare const jobStateWriters: Rule.RuleModule;
export default jobStateWriters;
