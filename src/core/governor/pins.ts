/**
 * Pins: objects no operation may touch. Decided at indexing time from the options and from
 * what the transcript shows (rules files read, constraints the user stated).
 */
import {
  defaultPin,
  isToolOutput,
  type LedgerObject,
  type PinContext,
  RULES_FILE_PIN,
  readsRulesFile,
  requestText,
} from '../ledger.js';
import type { Message } from '../transcript.js';
import type { PinOptions } from './governor-types.js';

const CONSTRAINT =
  /\b(must(?: not)?|never|do not|don't|always|only use|make sure|under no circumstances|avoid)\b/i;

/** A glob (`*`, `**`, `?`) as a regular expression that matches anywhere in a string. */
export function globToRegExp(glob: string): RegExp {
  let pattern = '';
  for (let index = 0; index < glob.length; index += 1) {
    const char = glob[index]!;
    if (char === '*') {
      const double = glob[index + 1] === '*';
      pattern += double ? '.*' : '[^/]*';
      if (double) index += 1;
    } else if (char === '?') pattern += '[^/]';
    else pattern += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(pattern);
}

/** The pin rule for the ledger, from options. */
export function createPinRule(options: PinOptions = {}) {
  const tools = new Set(options.tools ?? []);
  const paths = (options.paths ?? []).map(globToRegExp);
  const rulesFiles = options.rulesFiles !== false;
  const userConstraints = options.userConstraints !== false;
  return (object: LedgerObject, message: Message, context: PinContext): string | undefined => {
    const base = defaultPin(object, message, context);
    if (base) return base;
    if (isToolOutput(object)) {
      if (object.toolName && tools.has(object.toolName)) return `protected tool ${object.toolName}`;
      const call = object.callArguments ?? '';
      if (rulesFiles && readsRulesFile(call)) return RULES_FILE_PIN;
      if (paths.some((pattern) => pattern.test(call))) return 'pinned path';
    }
    if (object.kind === 'conversation' && userConstraints) {
      // The user's words: files a client attached to them state no rule.
      const textValue = requestText(message);
      // Short turns that state a rule are constraints; long pastes merely containing "must" are not.
      if (textValue.length < 2000 && CONSTRAINT.test(textValue)) return 'user constraint';
    }
    return undefined;
  };
}
