/**
 * A small, realistic coding session used across the core's tests: two user requests, file
 * reads, a failing and a passing test run, an edit.
 */
import type { Message } from '../transcript.js';
import {
  assistantCalls,
  assistantMessage,
  systemMessage,
  toolCall,
  toolMessage,
  toolResult,
  userMessage,
} from './transcript-builders.js';

export const PARSER_SOURCE = [
  'import re',
  '',
  'TOKEN_PATTERN = re.compile(r"[a-z]+|\\d+")',
  '',
  'def parse_line(line):',
  '    tokens = TOKEN_PATTERN.findall(line)',
  '    if not tokens:',
  '        raise ValueError(f"bad token {line!r}")',
  '    return tokens',
  '',
  'def parse_file(path):',
  '    with open(path) as handle:',
  '        return [parse_line(line) for line in handle]',
].join('\n');

export const FAILING_RUN = [
  '============================= test session starts ==============================',
  'collected 5 items',
  '',
  'tests/test_parser.py ....F',
  '',
  'Traceback (most recent call last):',
  '  File "src/parser.py", line 8, in parse_line',
  '    raise ValueError(f"bad token {line!r}")',
  "ValueError: bad token '???'",
  'FAILED tests/test_parser.py::test_symbols - ValueError',
  '========================= 1 failed, 4 passed in 0.31s ==========================',
].join('\n');

export const CLI_SOURCE = [
  'import argparse',
  'from parser import parse_file',
  '',
  'def build_parser():',
  '    parser = argparse.ArgumentParser(prog="tokenize")',
  '    parser.add_argument("path")',
  '    return parser',
  '',
  'def main(argv=None):',
  '    args = build_parser().parse_args(argv)',
  '    for tokens in parse_file(args.path):',
  '        print(" ".join(tokens))',
].join('\n');

/**
 * Indexes: 0 system, 1 user, 2–3 read_file, 4–5 failing bash, 6–7 edit_file, 8–9 passing bash,
 * 10 assistant, 11 user, 12–13 read_file, 14 assistant.
 */
export function sampleSession(): Message[] {
  return [
    systemMessage('You are a coding agent working in /repo. Use the tools to read and edit files.'),
    userMessage('The test tests/test_parser.py fails. The parser lives in src/parser.py; please fix it.'),
    assistantCalls([toolCall('call_1', 'read_file', { path: 'src/parser.py' })], 'Let me read the parser.'),
    toolMessage(toolResult('call_1', 'read_file', PARSER_SOURCE)),
    assistantCalls([toolCall('call_2', 'bash', { command: 'pytest tests/test_parser.py' })]),
    toolMessage(toolResult('call_2', 'bash', FAILING_RUN, { isError: true })),
    assistantCalls(
      [toolCall('call_3', 'edit_file', { path: 'src/parser.py', old: 'raise ValueError', new: 'return []' })],
      'The ValueError comes from parse_line in src/parser.py; symbols should yield no tokens.',
    ),
    toolMessage(toolResult('call_3', 'edit_file', 'Applied 1 edit to src/parser.py')),
    assistantCalls([toolCall('call_4', 'bash', { command: 'pytest tests/test_parser.py' })]),
    toolMessage(
      toolResult('call_4', 'bash', 'collected 5 items\n\ntests/test_parser.py .....\n5 passed in 0.12s'),
    ),
    assistantMessage('All 5 tests pass now.'),
    userMessage('Thanks. Now add a --verbose flag to cli.py.'),
    assistantCalls([toolCall('call_5', 'read_file', { path: 'cli.py' })]),
    toolMessage(toolResult('call_5', 'read_file', CLI_SOURCE)),
    assistantMessage('I will add the flag to build_parser in cli.py.'),
  ];
}

/**
 * The sample session with a second, finished request that produced a long listing, and a third,
 * running one. Indexes: 0–10 as in `sampleSession` (conversation:user:1), 11 user, 12–13 bash
 * `ls -R src` (60 lines), 14–15 read_file cli.py, 16 assistant (conversation:user:2), 17 user,
 * 18–19 read_file cli.py (conversation:user:3, the latest turn).
 */
export function threeRequestSession(): Message[] {
  return [
    ...sampleSession().slice(0, 11),
    userMessage('Now list the modules under src and summarise them.'),
    assistantCalls([toolCall('call_6', 'bash', { command: 'ls -R src' })]),
    toolMessage(toolResult('call_6', 'bash', moduleListing(60))),
    assistantCalls([toolCall('call_7', 'read_file', { path: 'cli.py' })]),
    toolMessage(toolResult('call_7', 'read_file', CLI_SOURCE)),
    assistantMessage('There are 60 modules; cli.py wires build_parser to parse_file.'),
    userMessage('Thanks. Now add a --verbose flag to cli.py.'),
    assistantCalls([toolCall('call_8', 'read_file', { path: 'cli.py' })]),
    toolMessage(toolResult('call_8', 'read_file', CLI_SOURCE)),
  ];
}

/** A regular, maskable listing of `count` lines. */
export function moduleListing(count: number): string {
  return Array.from(
    { length: count },
    (_, index) => `src/modules/m${index}.py  ${1000 + index * 37} bytes`,
  ).join('\n');
}
