// A job's record (coordinator JobState) is written only by the job's own state code: the files listed in
// OWNERS. Anyone else reads it, or asks the job's master to change it. Type-aware: it flags an assignment,
// ++/--, delete, or a mutating call (push, set, add, ...) on a property of a value whose type is JobState.
const MUTATING = new Set([
  'push',
  'pop',
  'shift',
  'unshift',
  'splice',
  'sort',
  'reverse',
  'set',
  'add',
  'delete',
  'clear',
]);

const TYPES = new Set(['JobState', 'NewJob']);
/** Utility types whose first argument is the record they view: Pick<JobState, ...> is a JobState still. */
const VIEWS = new Set(['Pick', 'Omit', 'Partial', 'Readonly', 'Required']);

function isJobStateType(t) {
  const alias = t.aliasSymbol?.getName();
  if (alias && TYPES.has(alias)) return true;
  if (alias && VIEWS.has(alias)) return t.aliasTypeArguments?.length > 0 && isJobStateType(t.aliasTypeArguments[0]);
  return TYPES.has(t.getSymbol()?.getName());
}

function isJobState(services, node) {
  const type = services.getTypeAtLocation(node);
  return (type.isUnion() || type.isIntersection() ? type.types : [type]).some(isJobStateType);
}

/** The JobState property a member chain ends in (`job.a.b` -> `a`), or undefined. */
function jobStateField(services, member) {
  let node = member;
  while (node.type === 'MemberExpression') {
    if (isJobState(services, node.object)) return node.property.name ?? '[computed]';
    node = unwrap(node.object);
  }
  return undefined;
}

/** `a!`, `(a as T)`, `a?.b`: the expression they wrap. */
function unwrap(node) {
  while (node.type === 'TSNonNullExpression' || node.type === 'TSAsExpression' || node.type === 'ChainExpression')
    node = node.expression;
  return node;
}

export default {
  meta: {
    type: 'problem',
    docs: { description: "JobState is written only by the job's own state code" },
    schema: [{ type: 'object', properties: { owners: { type: 'array', items: { type: 'string' } } } }],
    messages: {
      write:
        "JobState.{{field}} is written here, outside the job's own state code ({{owners}}): ask the job's master to change it.",
    },
  },
  create(context) {
    const owners = context.options[0]?.owners ?? [];
    const file = context.filename.replaceAll('\\', '/');
    if (owners.some((o) => file.endsWith(`/${o}`) || file.includes(`/${o}/`))) return {};
    const services = context.sourceCode.parserServices;
    const check = (target, node) => {
      target = target && unwrap(target);
      if (target?.type !== 'MemberExpression') return;
      const field = jobStateField(services, target);
      if (field) context.report({ node, messageId: 'write', data: { field, owners: owners.join(', ') } });
    };
    return {
      AssignmentExpression: (node) => check(node.left, node),
      UpdateExpression: (node) => check(node.argument, node),
      'UnaryExpression[operator="delete"]': (node) => check(node.argument, node),
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || !MUTATING.has(callee.property.name)) return;
        check(callee.object, node);
      },
    };
  },
};
