/**
 * What Cline, and the clients built on it (Roo Code, Kilo Code), attach to the user's words when
 * the user `@`-mentions something. Each mention reads `'src/app.ts' (see below for file content)`
 * in the words, and what it names follows at the end of the same text, one block after another:
 *
 *     <task>
 *     Fix 'src/app.ts' (see below for file content)
 *     </task>
 *
 *     <file_content path="src/app.ts">
 *     …the file…
 *     </file_content>
 *
 * The blocks are `file_content`, `folder_content` (a listing, then the folder's files as
 * `file_content` blocks), `url_content`, `workspace_diagnostics`, `git_working_state`,
 * `git_commit` and `terminal_output`. They are what the client read for the user: outputs, not the
 * user's words.
 */

/** One block: where it stands in its text (`start` at its `<`, `end` after its closing tag). */
export interface MentionBlock {
  start: number;
  end: number;
  /** The block's tag, such as `file_content`. */
  tag: string;
  /** What the block names (its `path`, `url` or `hash`), as a call's JSON arguments would. */
  callArguments?: string;
}

const TAGS = [
  'file_content',
  'folder_content',
  'url_content',
  'workspace_diagnostics',
  'git_working_state',
  'git_commit',
  'terminal_output',
];
/**
 * Roo Code and Kilo Code also expand a slash command the user typed into a block among these
 * (`<command name="review">`): the user's own instructions, which stay words.
 */
const WORDS_TAG = 'command';
const OPENING = new RegExp(
  `\\n\\n<(${[...TAGS, WORDS_TAG].join('|')})(?: (path|url|hash|name)="([^"\\n]*)")?>\\n`,
  'g',
);
/** The words say a mention's content follows: the client replaced each mention with this. */
const MENTION_NOTE =
  /\(see below for (?:file content|folder content|site content|diagnostics|details|commit info|output|command content)\)/;
/** Starts tried before giving up on a text: a pasted block in the words can come before the real ones. */
const MAX_STARTS = 16;

/**
 * The mention blocks at the end of `text`, in order; empty unless the words before them say that
 * content follows, and the blocks run, one after another, to the end of the text (a command's
 * block among them is not one of them: it stays words).
 */
export function mentionBlocks(text: string): MentionBlock[] {
  if (!text.includes('(see below for ')) return [];
  OPENING.lastIndex = 0;
  for (let tries = 0; tries < MAX_STARTS; tries += 1) {
    const opening = OPENING.exec(text);
    if (!opening) return [];
    if (!MENTION_NOTE.test(text.slice(0, opening.index))) continue;
    const blocks = blocksFrom(text, opening.index);
    if (blocks) return blocks;
    OPENING.lastIndex = opening.index + 1;
  }
  return [];
}

/** The blocks from `from` (a `\n\n` before an opening tag) to the end of the text, if they run there. */
function blocksFrom(text: string, from: number): MentionBlock[] | undefined {
  const blocks: MentionBlock[] = [];
  const opening = new RegExp(OPENING.source, 'y');
  let at = from;
  while (at < text.length && text.slice(at).trim() !== '') {
    opening.lastIndex = at;
    const match = opening.exec(text);
    if (!match) return undefined;
    const [, tag, attribute, value] = match;
    const closing = `\n</${tag}>`;
    // The block ends at the first closing tag after which the text ends or the next block opens:
    // a file may hold the closing tag itself.
    let end = -1;
    for (let close = text.indexOf(closing, opening.lastIndex); close >= 0; ) {
      const after = close + closing.length;
      opening.lastIndex = after;
      if (text.slice(after).trim() === '' || opening.test(text)) {
        end = after;
        break;
      }
      close = text.indexOf(closing, after);
    }
    if (end < 0) return undefined;
    if (tag !== WORDS_TAG) {
      blocks.push({
        start: match.index + 2,
        end,
        tag: tag!,
        ...(attribute === undefined ? {} : { callArguments: JSON.stringify({ [attribute]: value }) }),
      });
    }
    at = end;
  }
  return blocks;
}
