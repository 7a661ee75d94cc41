import { describe, expect, it } from 'vitest';
import type { RecordedExchange } from './recording-relay.js';
import type { RunRecord, ScenarioResult, UpstreamRecord } from './scenario-result.js';
import {
  checkAttachedFile,
  checkClientCompaction,
  checkForeignContent,
  checkKeptState,
  checkLatestTurn,
  checkOneSession,
  checkProxyAnswers,
  checkRecovery,
  checkRecoveryHidden,
  checkRefusalsRemedied,
  checkResumedHistory,
  checkRunsOverlap,
  checkScenarioPressure,
  checkTask,
  checkUpstreamCoding,
  cutBackRequests,
  forkedRequests,
  validateScenario,
} from './validate-run.js';

const PATH = '/v1/messages';
const ANSWER = 'E2E-DONE E2E-RUN-aaaa steps=1 token=E2E-TOKEN-bbbb';

function body(messages: unknown[], tools: unknown[] = [{ name: 'Read', input_schema: {} }]) {
  return { model: 'claude', max_tokens: 64, tools, messages };
}

const readCall = {
  type: 'tool_use',
  id: 'toolu_1',
  name: 'Read',
  input: { file_path: '/p/notes/part-01.txt' },
};
const readResult = { type: 'tool_result', tool_use_id: 'toolu_1', content: 'E2E-STEP-01 E2E-RUN-aaaa' };
const firstTurn = [{ role: 'user', content: 'go' }];
const secondTurn = [
  ...firstTurn,
  { role: 'assistant', content: [readCall] },
  { role: 'user', content: [readResult] },
];
/** The client's third request: a bulky first result, then a second step. */
const bulkyCall = { type: 'tool_use', id: 'toolu_0', name: 'Read', input: { file_path: '/p/notes/big.txt' } };
const bulkyResult = { type: 'tool_result', tool_use_id: 'toolu_0', content: 'z'.repeat(800) };
const bulkyTurn = [
  ...firstTurn,
  { role: 'assistant', content: [bulkyCall] },
  { role: 'user', content: [bulkyResult] },
  ...secondTurn.slice(1),
];
/** What a governing proxy sends for it: the bulky step folded, the latest turn as it came. */
const governedTurn = [
  ...firstTurn,
  { role: 'user', content: '[folded: expand("function:Read:0")]' },
  ...secondTurn.slice(1),
];
/** Holds every upstream request below, not the client's bulky one. */
const WINDOW = 160;

function exchange(
  index: number,
  sent: unknown,
  status = 200,
  answer = 'event: message_stop',
): RecordedExchange {
  return {
    index,
    at: 0,
    method: 'POST',
    path: `${PATH}?beta=true`,
    headers: {},
    body: JSON.stringify(sent),
    status,
    answer,
  };
}

function upstream(index: number, sent: unknown): UpstreamRecord {
  return { index, method: 'POST', path: PATH, headers: {}, body: sent };
}

/** A run in which the proxy forwarded both requests as they came and the CLI printed its answer. */
function soundRun(overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    label: 'run-1',
    marker: 'E2E-RUN-aaaa',
    uniqueStrings: ['E2E-RUN-aaaa'],
    expectedAnswer: ANSWER,
    exitCode: 0,
    signal: null,
    timedOut: false,
    durationMs: 1000,
    stdout: `${ANSWER}\n`,
    stderr: '',
    relayStartedAt: 0,
    client: [exchange(0, body(firstTurn)), exchange(1, body(secondTurn)), exchange(2, body(bulkyTurn))],
    upstream: [upstream(0, body(firstTurn)), upstream(1, body(secondTurn)), upstream(2, body(governedTurn))],
    ...overrides,
  };
}

function scenario(runs: RunRecord[], window = WINDOW): ScenarioResult {
  return {
    agent: 'claude-code',
    scenario: 'two-runs',
    window,
    proxied: true,
    runs,
    proxyLog: [],
    proxyOutput: [],
  };
}

describe('checkTask', () => {
  it('passes a CLI that exited 0 with the expected answer', () => {
    expect(checkTask(soundRun())).toEqual([]);
  });

  it('fails a CLI that exited non-zero, timed out or printed something else', () => {
    expect(checkTask(soundRun({ exitCode: 1, stdout: 'API Error: 400' }))[0]).toMatch(
      /^the CLI exited with 1; its output lacks "E2E-DONE .*stdout: API Error: 400/,
    );
    expect(checkTask(soundRun({ timedOut: true, exitCode: null, signal: 'SIGKILL' }))[0]).toMatch(
      /did not finish within its time limit/,
    );
  });

  it('passes a run that only compacts when it asked the model for the summary, whatever it printed', () => {
    const asked = [
      ...secondTurn,
      {
        role: 'user',
        content: 'Your task is to create a detailed summary of the conversation so far, in <summary> tags.',
      },
    ];
    const compacting = { compacts: true, expectedAnswer: '', stdout: '\n' };
    expect(checkTask(soundRun({ ...compacting, upstream: [upstream(3, body(asked))] }))).toEqual([]);
    expect(checkTask(soundRun(compacting))[0]).toMatch(
      /^no request of the run asked the model for a compaction summary/,
    );
  });
});

describe('checkForeignContent', () => {
  const leaked = [...secondTurn, { role: 'user', content: 'anchors: 5eed1234 from before' }];

  it('flags a string of an earlier run that the client never sent', () => {
    const run = soundRun({ upstream: [upstream(7, body(leaked))] });
    expect(checkForeignContent(run, ['5eed1234', 'c0ffee99'])).toEqual([
      {
        check: 'foreign-content',
        run: 'run-1',
        request: 7,
        message: "carries 1 string(s) of another run that this run's client never sent: 5eed1234",
      },
    ]);
  });

  it('accepts it when the client itself sent it', () => {
    const run = soundRun({ client: [exchange(0, body(leaked))], upstream: [upstream(7, body(leaked))] });
    expect(checkForeignContent(run, ['5eed1234'])).toEqual([]);
  });
});

describe('checkLatestTurn', () => {
  it('passes when the latest tool results reach the upstream', () => {
    expect(checkLatestTurn(soundRun())).toEqual([]);
  });

  it('flags a latest turn that governance folded away', () => {
    const folded = [...firstTurn, { role: 'user', content: '[folded: 2 messages]' }];
    const [violation] = checkLatestTurn(
      soundRun({ upstream: [upstream(0, body(firstTurn)), upstream(1, body(folded))] }),
    );
    expect(violation).toMatchObject({ check: 'latest-turn', request: 1 });
  });

  it('flags a last user turn whose text did not reach the upstream as the client sent it', () => {
    const asked = [...secondTurn, { role: 'user', content: 'Now summarize notes/part-01.txt' }];
    const changed = [...secondTurn, { role: 'user', content: 'Now summarize [folded: notes/part-01.txt]' }];
    const clean = soundRun({ client: [exchange(0, body(asked))], upstream: [upstream(0, body(asked))] });
    expect(checkLatestTurn(clean)).toEqual([]);
    const [violation] = checkLatestTurn({ ...clean, upstream: [upstream(0, body(changed))] });
    expect(violation).toMatchObject({ check: 'latest-turn', request: 0 });
    expect(violation?.message).toContain('"Now summarize notes/part-01.txt"');
  });

  it('takes a last user turn joined after the user messages before it, as a view for a Chat client is', () => {
    const asked = [
      ...secondTurn,
      { role: 'assistant', content: 'E2E-DONE' },
      { role: 'user', content: 'Now tell me the release code.' },
    ];
    const joined = (last: string) => [
      firstTurn[0],
      {
        role: 'user',
        content: [
          { type: 'text', text: '[folded conversation:user:1@4: 4 messages]' },
          { type: 'text', text: last },
        ],
      },
    ];
    const run = soundRun({
      client: [exchange(0, body(asked))],
      upstream: [upstream(0, body(joined('Now tell me the release code.')))],
    });
    expect(checkLatestTurn(run)).toEqual([]);
    const changed = { ...run, upstream: [upstream(0, body(joined('Now tell me the code.')))] };
    expect(checkLatestTurn(changed)).toMatchObject([{ check: 'latest-turn', request: 0 }]);
  });

  it('flags a latest turn joined after a copy of itself', () => {
    const prompt = 'Now tell me the release code.';
    const asked = [
      ...secondTurn,
      { role: 'assistant', content: 'E2E-DONE' },
      { role: 'user', content: prompt },
    ];
    const twice = [...firstTurn, { role: 'user', content: `${prompt}\n\n${prompt}` }];
    const run = soundRun({ client: [exchange(0, body(asked))], upstream: [upstream(0, body(twice))] });
    expect(checkLatestTurn(run)).toMatchObject([{ check: 'latest-turn', request: 0 }]);
  });

  it('takes each upstream request for one client request: a second one with the same words does not cover a changed one', () => {
    const prompt = 'Now tell me the release code.';
    const asked = [
      ...secondTurn,
      { role: 'assistant', content: 'E2E-DONE' },
      { role: 'user', content: prompt },
    ];
    // A title request beside the task's, ending with the same prompt (opencode's, Kilo's).
    const title = [
      { role: 'user', content: 'Generate a title for this conversation:' },
      { role: 'user', content: prompt },
    ];
    const changed = [...firstTurn, { role: 'user', content: '[folded conversation:user:1@4: 4 messages]' }];
    const sound = soundRun({
      client: [exchange(0, body(title)), exchange(1, body(asked))],
      upstream: [upstream(0, body(title)), upstream(1, body(asked))],
    });
    expect(checkLatestTurn(sound)).toEqual([]);
    const run = { ...sound, upstream: [upstream(0, body(title)), upstream(1, body(changed))] };
    expect(checkLatestTurn(run)).toMatchObject([{ check: 'latest-turn' }]);
    // A request the proxy did not answer with 2xx need not have gone upstream (checkProxyAnswers flags it).
    const refused = { ...sound, client: [exchange(0, body(asked), 400), exchange(1, body(asked))] };
    expect(checkLatestTurn({ ...refused, upstream: [upstream(1, body(asked))] })).toEqual([]);
  });

  it('lets the window rescue fold the files a client attached to the last user turn, and nothing else', () => {
    const file = '<system-reminder>\nResult of calling the Read tool:\n1\tE2E-STEP-01\n</system-reminder>\n';
    const fold =
      '[folded function:Read:1: Read file_path=/p/notes/part-01.txt → ok, 9 tokens]\nanchors: E2E-STEP-01\n(exact output kept; expand("function:Read:1") recovers it)';
    const turn = (...texts: string[]) => [
      ...secondTurn,
      { role: 'user', content: texts.map((text) => ({ type: 'text', text })) },
    ];
    const sent = turn(file, 'Which step was it?');
    const rescued = soundRun({
      client: [exchange(0, body(sent))],
      upstream: [upstream(0, body(turn(fold, 'Which step was it?')))],
    });
    expect(checkLatestTurn(rescued)).toEqual([]);
    // The user's words changed beside the fold: flagged.
    const changed = { ...rescued, upstream: [upstream(0, body(turn(fold, 'Which step?')))] };
    expect(checkLatestTurn(changed)).toMatchObject([{ check: 'latest-turn', request: 0 }]);
    // The file dropped without a fold in its place: flagged.
    const dropped = { ...rescued, upstream: [upstream(0, body(turn('Which step was it?')))] };
    expect(checkLatestTurn(dropped)).toMatchObject([{ check: 'latest-turn', request: 0 }]);
  });

  it("says where the closest upstream result parts from the client's", () => {
    const changed = { ...readResult, content: 'E2E-STEP-01 E2E-RUN-aaab' };
    const sent = [
      ...firstTurn,
      { role: 'assistant', content: [readCall] },
      { role: 'user', content: [changed] },
    ];
    const [violation] = checkLatestTurn(
      soundRun({ upstream: [upstream(0, body(firstTurn)), upstream(1, body(sent))] }),
    );
    expect(violation?.message).toContain(
      'parts from it at character 23 of 24: "-STEP-01 E2E-RUN-aaaa" became "-STEP-01 E2E-RUN-aaab"',
    );
  });
});

it('names the result the upstream changed when it is not the first', () => {
  const call = (id: string) => ({ ...readCall, id });
  const result = (id: string, content: string) => ({ type: 'tool_result', tool_use_id: id, content });
  const turn = (second: string) => [
    ...firstTurn,
    { role: 'assistant', content: [call('toolu_1'), call('toolu_2')] },
    { role: 'user', content: [result('toolu_1', 'alpha same'), result('toolu_2', second)] },
  ];
  const [violation] = checkLatestTurn(
    soundRun({
      client: [exchange(0, body(firstTurn)), exchange(1, body(turn('E2E-STEP-02 beta')))],
      upstream: [upstream(0, body(firstTurn)), upstream(1, body(turn('E2E-STEP-02 beta changed')))],
    }),
  );
  expect(violation?.message).toContain('parts from it at character 16 of 16');
});

describe('checkProxyAnswers', () => {
  it('flags a refused request with the proxy message', () => {
    const run = soundRun({
      client: [exchange(0, body(firstTurn), 400, '{"error":"role: Invalid discriminator"}')],
    });
    expect(checkProxyAnswers(run)).toEqual([
      {
        check: 'proxy-answers',
        run: 'run-1',
        request: 0,
        message: 'POST /v1/messages?beta=true answered 400: {"error":"role: Invalid discriminator"}',
      },
    ]);
  });

  it('takes a 426 for the answer to a WebSocket handshake, and only for it', () => {
    const handshake = (status: number, upgrade = 'websocket'): RecordedExchange => ({
      ...exchange(0, '', status, '{"error":{"code":"selfgc_upgrade_required"}}'),
      method: 'GET',
      headers: { connection: 'Upgrade', upgrade },
    });
    expect(checkProxyAnswers(soundRun({ client: [handshake(426)] }))).toEqual([]);
    expect(checkProxyAnswers(soundRun({ client: [handshake(502)] }))).toHaveLength(1);
    expect(checkProxyAnswers(soundRun({ client: [handshake(426, 'h2c')] }))).toHaveLength(1);
    expect(checkProxyAnswers(soundRun({ client: [exchange(0, body(firstTurn), 426)] }))).toHaveLength(1);
  });
});

describe('checkUpstreamCoding', () => {
  const upstream = (headers: Record<string, string>, body: unknown = { model: 'm' }) => ({
    index: 3,
    method: 'POST',
    path: '/responses',
    headers,
    body,
  });
  it('flags a JSON body that goes upstream still naming a coding, and only that', () => {
    expect(checkUpstreamCoding(soundRun({ upstream: [upstream({ 'content-encoding': 'zstd' })] }))).toEqual([
      {
        check: 'upstream-coding',
        run: 'run-1',
        request: 3,
        message: 'POST /responses went upstream as JSON with content-encoding: zstd',
      },
    ]);
    expect(checkUpstreamCoding(soundRun({ upstream: [upstream({})] }))).toEqual([]);
    // A body passed on in a coding the proxy cannot read is not JSON upstream.
    expect(
      checkUpstreamCoding(soundRun({ upstream: [upstream({ 'content-encoding': 'x-custom' }, '\u0000')] })),
    ).toEqual([]);
  });
});

describe('recovery', () => {
  const secret = 'amber birch cedar';
  const expandTool = { name: 'selfgc_expand', input_schema: {} };
  const pointer = [...secondTurn.slice(0, 1), { role: 'user', content: 'folded, expand("function:Read:1")' }];
  const expandCall = {
    type: 'tool_use',
    id: 'toolu_9',
    name: 'selfgc_expand',
    input: { id: 'function:Read:1' },
  };
  const afterExpand = (text: string) => [
    ...pointer,
    { role: 'assistant', content: [expandCall] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: text }] },
  ];

  const nextPage = (offset: number) => [
    {
      role: 'assistant',
      content: [{ ...expandCall, id: 'toolu_10', input: { id: 'function:Read:1', offset } }],
    },
    {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_10', content: `The release code is ${secret}.` }],
    },
  ];

  it('passes when a selfgc_expand result brought the secret back upstream from a next page', () => {
    const run = soundRun({
      secret,
      upstream: [
        upstream(0, body(pointer, [expandTool])),
        upstream(1, body([...afterExpand('the first page'), ...nextPage(1200)])),
      ],
    });
    expect(checkRecovery(run)).toEqual([]);
  });

  it('says so when the secret came back on the first page: the paging path went unexercised', () => {
    const run = soundRun({
      secret,
      upstream: [
        upstream(0, body(pointer, [expandTool])),
        upstream(1, body(afterExpand(`The release code is ${secret}.`))),
      ],
    });
    expect(checkRecovery(run)).toEqual([
      'the secret came back on the first selfgc_expand page: no request read a next page (offset > 0)',
    ]);
  });

  it('fails, with what the requests showed, when the secret never came back', () => {
    const run = soundRun({ secret, upstream: [upstream(0, body(pointer))], stdout: 'E2E-FAILED no tool' });
    expect(checkRecovery(run)).toEqual([
      'no upstream request carried a selfgc_expand result with the secret: of 1 upstream requests, 1 showed recovery pointers, 0 offered selfgc_expand, 0 carried selfgc_expand results; the secret was not in the last one. CLI output: E2E-FAILED no tool',
    ]);
    const wrong = soundRun({
      secret,
      upstream: [upstream(0, body(afterExpand('something else'), [expandTool]))],
    });
    expect(checkRecovery(wrong)).toHaveLength(1);
  });

  it('flags the proxy tool reaching the client, in its answer or in what it sends back', () => {
    const run = soundRun({
      client: [
        exchange(
          0,
          body(firstTurn),
          200,
          'data: {"content_block":{"type":"tool_use","name":"selfgc_expand"}}',
        ),
        exchange(1, body(afterExpand('x'))),
      ],
    });
    expect(checkRecoveryHidden(run).map((violation) => violation.request)).toEqual([1, 0]);
    expect(checkRecoveryHidden(soundRun())).toEqual([]);
    const told = soundRun({
      client: [exchange(0, body(firstTurn), 200, 'data: {"text":"no selfgc_expand here"}')],
    });
    expect(checkRecoveryHidden(told)).toEqual([]);
  });
});

describe('checkAttachedFile', () => {
  const line =
    'part 1 line 011: planner cache upstream result index fold commit harness token checksum=0123abcd';
  const withFile = [
    {
      role: 'user',
      content: [
        { type: 'text', text: `1\t${line}` },
        { type: 'text', text: 'go' },
      ],
    },
  ];
  const folded = [
    {
      role: 'user',
      content: [
        { type: 'text', text: '[folded function:Read:1]' },
        { type: 'text', text: 'go' },
      ],
    },
  ];
  const attachedRun = (...sent: unknown[][]) =>
    soundRun({
      attachedLine: line,
      client: [exchange(0, body(withFile))],
      upstream: sent.map((messages, index) => upstream(index, body(messages))),
    });

  it('flags a file the CLI attached that stayed whole in every upstream request', () => {
    expect(checkAttachedFile(attachedRun(withFile, withFile))).toHaveLength(1);
  });

  it('passes once some upstream request folded it', () => {
    expect(checkAttachedFile(attachedRun(withFile, folded))).toEqual([]);
  });

  it('has nothing to check when the CLI attached no file (Codex), or the scenario none', () => {
    const unattached = { ...attachedRun(withFile, withFile), client: [exchange(0, body(firstTurn))] };
    expect(checkAttachedFile(unattached)).toEqual([]);
    expect(checkAttachedFile(soundRun())).toEqual([]);
  });
});

describe('checkScenarioPressure', () => {
  it('says when no client request outgrew the window (a scenario that tests nothing)', () => {
    expect(checkScenarioPressure([soundRun()], 100_000)[0]).toMatch(/within the window of 100000/);
    expect(checkScenarioPressure([soundRun()], WINDOW)).toEqual([]);
  });
});

describe('checkRefusalsRemedied', () => {
  it('asks of a platform without the binding controls that some request went again after its refusal', () => {
    const bare = { ...scenario([soundRun()]), scenario: 'no-binding-controls' as const };
    expect(checkRefusalsRemedied(bare)[0]).toMatch(/the platform's refusal was never met/);
    const remedied = { ...bare, proxyLog: [{ warnings: ['sent-again-after-refusal'] }] };
    expect(checkRefusalsRemedied(remedied)).toEqual([]);
    // Another scenario's upstream has the controls: nothing to ask.
    expect(checkRefusalsRemedied(scenario([soundRun()]))).toEqual([]);
  });
});

describe('checkKeptState', () => {
  it("flags a request that dropped the states of its session's other conversation", () => {
    const log = [
      { session: 'a1', path: '/v1/messages', governance: 'committed' },
      { session: 'a1', path: '/v1/messages', divergedAt: 0, droppedStates: 6 },
      // A divergence with nothing stored past it loses nothing.
      { session: 'b2', path: '/v1/messages', divergedAt: 2, droppedStates: 0 },
    ];
    expect(checkKeptState(log)).toEqual([
      "proxy log entry #1 (session a1, /v1/messages) dropped 6 object state(s) at message 0: another conversation's request took its session's state",
    ]);
    expect(checkKeptState([log[0]!, log[2]!])).toEqual([]);
    const dropping = { ...scenario([soundRun()]), proxyLog: log };
    expect(validateScenario(dropping).map((violation) => violation.check)).toEqual(['kept-state']);
  });
});

describe('checkKeptState after the client cut its history back', () => {
  it("excuses the drops of a rewound run's requests up to its first commit, and no others", () => {
    const requests = ['req_a', 'req_b', 'req_c', 'req_d'];
    const client = requests.map((requestId, index) => ({
      ...exchange(index, body(firstTurn)),
      requestId,
      ...(index === 1 ? { commit: 'c3-a' } : {}),
    }));
    const rewound = soundRun({ label: 'run-2', client, rewindTo: 4 });
    expect([...cutBackRequests([soundRun({ client }), rewound])]).toEqual(['req_a', 'req_b']);
    const drop = (requestId: string) => ({
      session: 'a1',
      path: '/v1/messages',
      requestId,
      divergedAt: 11,
      droppedStates: 4,
    });
    const log = [drop('req_a'), drop('req_b'), drop('req_c')];
    expect(checkKeptState(log, cutBackRequests([rewound]))).toEqual([
      "proxy log entry #2 (session a1, /v1/messages) dropped 4 object state(s) at message 11: another conversation's request took its session's state",
    ]);
    expect(checkKeptState(log)).toHaveLength(3);
  });
});

describe('checkResumedHistory', () => {
  const before = soundRun({ marker: 'E2E-RUN-aaaa' });
  const stepFiles = (...steps: number[]) => [
    ...firstTurn,
    ...steps.map((step) => ({ role: 'user', content: `E2E-STEP-0${step} E2E-RUN-aaaa\npart ${step}` })),
    { role: 'user', content: 'go on with notes/after/' },
  ];
  const resumed = (rewindTo: number | undefined, ...steps: number[]) =>
    soundRun({
      label: 'run-2',
      marker: 'E2E-RUN-cccc',
      continues: true,
      ...(rewindTo === undefined ? {} : { rewindTo }),
      client: [exchange(0, body(stepFiles(...steps)))],
    });

  it('passes a resumed run whose client sent the history, cut back where it was cut', () => {
    expect(checkResumedHistory(resumed(undefined, 1, 2, 3, 4, 5), before)).toEqual([]);
    expect(checkResumedHistory(resumed(4, 1, 2, 3, 4), before)).toEqual([]);
  });

  it('flags a CLI that started afresh instead of resuming', () => {
    const fresh = soundRun({ label: 'run-2', marker: 'E2E-RUN-cccc', continues: true, client: [] });
    expect(checkResumedHistory(fresh, before)).toEqual([
      'no request of the client held E2E-RUN-aaaa of run-1: the CLI did not resume its conversation',
    ]);
  });

  it('flags a rewound run whose client still sent the cut steps, or not the step it was cut to', () => {
    expect(checkResumedHistory(resumed(4, 1, 2, 3, 4, 5, 6), before)).toEqual([
      'the client sent step(s) 5, 6 of run-1, cut from its saved conversation: the cut did not take',
    ]);
    expect(checkResumedHistory(resumed(4, 1, 2, 3), before)).toEqual([
      'the client never sent step 4 of run-1, the step it was cut back to',
    ]);
  });

  it('has nothing to check for a run that goes on with the same task (resume, compaction) or none', () => {
    expect(checkResumedHistory({ ...before, label: 'run-2', continues: true, client: [] }, before)).toEqual(
      [],
    );
    expect(checkResumedHistory(resumed(undefined), undefined)).toEqual([]);
    expect(checkResumedHistory({ ...resumed(undefined), continues: false }, before)).toEqual([]);
  });

  it('holds the runs that resume at once to the run of the group before them', () => {
    const forks = [resumed(undefined, 1), { ...resumed(undefined), label: 'run-3', alongside: true }];
    const checks = validateScenario(scenario([before, ...forks])).filter(
      (violation) => violation.check === 'resumed-history',
    );
    expect(checks.map((violation) => violation.run)).toEqual(['run-3']);
  });
});

describe('checkKeptState after two processes resumed one conversation at once', () => {
  it("excuses the drops of the forks' requests, not those of the run they resume", () => {
    const withIds = (prefix: string) =>
      soundRun().client.map((record, index) => ({ ...record, requestId: `${prefix}${index}` }));
    const first = soundRun({ client: withIds('req_1') });
    const forks = [
      soundRun({ label: 'run-2', continues: true, client: withIds('req_2') }),
      soundRun({ label: 'run-3', continues: true, alongside: true, client: withIds('req_3') }),
    ];
    expect([...forkedRequests([first, ...forks])]).toEqual([
      'req_20',
      'req_21',
      'req_22',
      'req_30',
      'req_31',
      'req_32',
    ]);
    // Resumed one after the other, neither is a fork.
    expect(forkedRequests([first, forks[0]!, { ...forks[1]!, alongside: false }]).size).toBe(0);
    const drop = (requestId: string) => ({
      session: 'a1',
      path: '/v1/messages',
      requestId,
      divergedAt: 9,
      droppedStates: 1,
    });
    const result = {
      ...scenario([first, ...forks]),
      proxyLog: [drop('req_11'), drop('req_21'), drop('req_31')],
    };
    expect(validateScenario(result).map((violation) => violation.message)).toEqual([
      "proxy log entry #0 (session a1, /v1/messages) dropped 1 object state(s) at message 9: another conversation's request took its session's state",
    ]);
  });
});

describe('checkKeptState after the proxy told the client to compact', () => {
  it('lets a signalled session replace its history, and only that session', () => {
    const log = [
      { session: 'a1', path: '/v1/responses', warnings: ['client-compaction'] },
      { session: 'a1', path: '/v1/responses', divergedAt: 1, droppedStates: 1 },
      { session: 'b2', path: '/v1/responses', divergedAt: 1, droppedStates: 2 },
    ];
    expect(checkKeptState(log)).toEqual([
      "proxy log entry #2 (session b2, /v1/responses) dropped 2 object state(s) at message 1: another conversation's request took its session's state",
    ]);
    // A drop before the signal is not excused by it, nor a second drop after one signal.
    expect(checkKeptState([log[1]!, log[0]!])).toHaveLength(1);
    expect(checkKeptState([log[0]!, log[1]!, log[1]!])).toEqual([
      "proxy log entry #2 (session a1, /v1/responses) dropped 1 object state(s) at message 1: another conversation's request took its session's state",
    ]);
  });

  it("excuses a drop by an earlier answer's signal, never by the request's own", () => {
    const told = { session: 'a1', path: '/v1/responses', warnings: ['client-compaction'] };
    const toldAndDropped = { ...told, divergedAt: 1, droppedStates: 1 };
    const dropped = { session: 'a1', path: '/v1/responses', divergedAt: 1, droppedStates: 1 };
    // The client had not read the signal of the answer to the request that dropped.
    expect(checkKeptState([toldAndDropped])).toEqual([
      "proxy log entry #0 (session a1, /v1/responses) dropped 1 object state(s) at message 1: another conversation's request took its session's state",
    ]);
    // Told, then a request that drops and is told again, then one more drop: each follows a signal.
    expect(checkKeptState([told, toldAndDropped, dropped])).toEqual([]);
  });
});

describe('checkClientCompaction', () => {
  const compactionAsk = [
    ...bulkyTurn,
    { role: 'assistant', content: 'Step 2.' },
    {
      role: 'user',
      content: 'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.',
    },
  ];
  const afterSummary = [...firstTurn, { role: 'user', content: 'E2E-SUMMARY E2E-RUN-aaaa steps=1 token=x' }];
  const signalled = (record: RecordedExchange) => ({
    ...record,
    warnings: ['fallback-reduction', 'client-compaction'],
  });
  /** The client told its prompt, its compaction request, a side request, then its loop going on. */
  const compacting = (after: unknown[], signal = true) =>
    soundRun({
      autoCompacts: true,
      client: [
        signal ? signalled(exchange(0, body(bulkyTurn))) : exchange(0, body(bulkyTurn)),
        exchange(1, body(compactionAsk, [])),
        exchange(2, body([{ role: 'user', content: 'x'.repeat(4_000) }], [])),
        exchange(3, body(after)),
      ],
    });

  it('passes a run whose client, told its prompt, asked for a summary and went on with less', () => {
    expect(checkClientCompaction(compacting(afterSummary))).toEqual([]);
  });

  it('fails without the signal, without a compaction after it, or when the loop did not shrink', () => {
    expect(checkClientCompaction(compacting(afterSummary, false))).toEqual([
      "the proxy never reported the client's whole prompt (no client-compaction warning)",
    ]);
    // The compaction came before the signal: the CLI compacted by itself.
    const early = compacting(afterSummary);
    early.client = [exchange(0, body(compactionAsk, [])), signalled(exchange(1, body(bulkyTurn)))];
    expect(checkClientCompaction(early)).toEqual([
      'the client never asked for a compaction summary after the proxy reported its prompt',
    ]);
    // Only the side request (no tools) is smaller: the loop went on with its whole history.
    const wholeHistory = [
      ...compactionAsk,
      { role: 'assistant', content: 'Noted.' },
      { role: 'user', content: 'Go on.' },
    ];
    expect(checkClientCompaction(compacting(wholeHistory))[0]).toMatch(
      /^the request after the compaction \(\d+ tokens\) is no smaller than the largest before it/,
    );
  });

  it('takes the loop going on from the request after the last compaction request, tools or not', () => {
    // A compaction request with the tools, asked twice (a retry): neither is the loop going on.
    const retried = compacting(afterSummary);
    retried.client = [
      signalled(exchange(0, body(bulkyTurn))),
      exchange(1, body(compactionAsk)),
      exchange(2, body(compactionAsk)),
      exchange(3, body(afterSummary)),
    ];
    expect(checkClientCompaction(retried)).toEqual([]);
  });

  it('has nothing to check in a run that was not to compact', () => {
    expect(checkClientCompaction(soundRun())).toEqual([]);
  });
});

describe('checkOneSession', () => {
  const inSession = (record: RecordedExchange, session: string, commit?: string) => ({
    ...record,
    session,
    ...(commit === undefined ? {} : { commit }),
  });
  const subagentTurn = [{ role: 'user', content: 'E2E-SUBTASK: read two notes' }];
  /** The run's three client requests in these sessions, each with its commit if it has one. */
  const withSessions = (
    sessions: string[],
    extra: RecordedExchange[] = [],
    commits: ReadonlyArray<string | undefined> = [],
  ) =>
    soundRun({
      client: [
        ...soundRun().client.map((record, at) => inSession(record, sessions[at]!, commits[at])),
        ...extra,
      ],
    });

  it('passes conversations that each kept one session, the subagent in its own', () => {
    const run = withSessions(
      ['cc:a#1', 'cc:a#1', 'cc:a#1'],
      [inSession(exchange(3, body(subagentTurn)), 'cc:a/agent:b#2')],
      [undefined, 'c1-a', 'c2-b'],
    );
    expect(checkOneSession([run])).toEqual([]);
  });

  it('flags a conversation that moved to another session after a commit, and a resumed one that did', () => {
    const [split] = checkOneSession([
      withSessions(['cc:a#1', 'cc:a#1', 'cc:a/agent:s1#1'], [], [undefined, 'c1-a']),
    ]);
    expect(split?.message).toMatch(
      /went on in session cc:a\/agent:s1#1 after governance committed in cc:a#1$/,
    );
    expect(split?.request).toBe(2);
    const first = withSessions(['cc:a#1', 'cc:a#1', 'cc:a#1'], [], [undefined, 'c1-a']);
    const resumed = { ...withSessions(['cc:b#1', 'cc:b#1', 'cc:b#1']), label: 'run-2', continues: true };
    expect(checkOneSession([first, resumed]).map((violation) => violation.run)).toEqual(['run-2']);
    // A run that does not resume is a new conversation, in a session of its own.
    expect(checkOneSession([first, { ...resumed, continues: false }])).toEqual([]);
  });

  it('flags a conversation that comes back to its session after a request in another', () => {
    const back = withSessions(['cc:a#1', 'cc:b#1', 'cc:a#1'], [], ['c1-a']);
    expect(checkOneSession([back]).map((violation) => violation.request)).toEqual([1]);
    // A resumed run that goes elsewhere first, though it ends where the commit is.
    const first = withSessions(['cc:a#1', 'cc:a#1', 'cc:a#1'], [], ['c1-a']);
    const resumed = { ...withSessions(['cc:x#1', 'cc:a#1', 'cc:a#1']), label: 'run-2', continues: true };
    expect(checkOneSession([first, resumed]).map((violation) => violation.run)).toEqual(['run-2']);
    // The commit is remembered over runs that commit nothing more.
    const again = { ...withSessions(['cc:a#1', 'cc:a#1', 'cc:a#1']), label: 'run-2', continues: true };
    const third = { ...withSessions(['cc:b#1', 'cc:b#1', 'cc:b#1']), label: 'run-3', continues: true };
    expect(checkOneSession([first, again, third]).map((violation) => violation.run)).toEqual(['run-3']);
  });

  it('passes a conversation that left a session before anything was committed in it', () => {
    // A client without a session id of its own: the first request is governed by the hash of
    // the conversation's start, the later ones by that and the first reply.
    const run = withSessions(['auto-start', 'auto-reply', 'auto-reply'], [], [undefined, 'c1-a', 'c2-b']);
    expect(checkOneSession([run])).toEqual([]);
    // The same move after a commit in the first session leaves that commit behind.
    const committed = withSessions(['auto-start', 'auto-reply', 'auto-reply'], [], ['c1-a']);
    expect(checkOneSession([committed])[0]?.message).toMatch(/after governance committed in auto-start$/);
  });
});

describe('validateScenario', () => {
  it('passes a sound scenario', () => {
    expect(validateScenario(scenario([soundRun()]))).toEqual([]);
  });

  it('lists every failed check of a bad one', () => {
    const first = soundRun({ uniqueStrings: ['E2E-RUN-aaaa', '5eed1234'] });
    const leaked = [...firstTurn, { role: 'user', content: 'folded, anchor 5eed1234' }];
    const second = soundRun({
      label: 'run-2',
      marker: 'E2E-RUN-cccc',
      uniqueStrings: ['E2E-RUN-cccc'],
      exitCode: 2,
      upstream: [upstream(2, body(firstTurn)), upstream(3, body(leaked))],
    });
    const checks = validateScenario(scenario([first, second])).map((violation) => violation.check);
    expect(checks).toEqual(['task', 'latest-turn', 'latest-turn', 'foreign-content']);
    const narrow = validateScenario(scenario([soundRun()], 60)).map((violation) => violation.check);
    expect(narrow).toEqual(['window', 'window', 'window']);
  });

  it("holds runs that went at once to each other's content, later runs' too", () => {
    const leaked = [...secondTurn, { role: 'user', content: 'folded, anchor 5eed1234' }];
    const first = soundRun({ uniqueStrings: ['E2E-RUN-aaaa'], upstream: [upstream(1, body(leaked))] });
    const second = soundRun({ label: 'run-2', marker: 'E2E-RUN-cccc', uniqueStrings: ['5eed1234'] });
    const checks = (result: ScenarioResult) =>
      validateScenario(result)
        .filter((violation) => violation.check === 'foreign-content')
        .map((violation) => `${violation.run} #${violation.request}`);
    // One after the other, run-1 could not have seen what only run-2 held.
    expect(checks(scenario([first, second]))).toEqual([]);
    expect(checks(scenario([first, { ...second, alongside: true }]))).toEqual(['run-1 #1']);
  });

  it('holds runs that were to go at once to having overlapped', () => {
    const timed = (label: string, relayStartedAt: number, at: number[], alongside = true) =>
      soundRun({
        label,
        relayStartedAt,
        ...(alongside ? { alongside: true } : {}),
        client: at.map((time, index) => ({ ...exchange(index, body(firstTurn)), at: time })),
      });
    const first = timed('run-1', 1_000, [0, 500], false);
    expect(checkRunsOverlap([first, timed('run-2', 1_200, [100, 900])])).toEqual([]);
    expect(checkRunsOverlap([first, timed('run-2', 2_000, [0, 300])])).toEqual([
      "run-1 and run-2 were to go at once, but one's requests all came before the other's: 1000–1500 and 2000–2300 ms",
    ]);
    // One after the other, nothing to hold.
    expect(checkRunsOverlap([first, timed('run-2', 2_000, [0, 300], false)])).toEqual([]);
  });

  it('reports a runner failure', () => {
    expect(validateScenario({ ...scenario([]), error: 'selfgc proxy exited' })).toEqual([
      { check: 'runner', run: '-', message: 'selfgc proxy exited' },
    ]);
  });
});
