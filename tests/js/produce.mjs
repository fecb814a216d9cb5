// Produce AI SDK UI message streams with the real `ai` package (streamText + its mock
// model), one scenario per file: `node produce.mjs OUT_DIR` writes OUT_DIR/<name>.sse,
// exactly the bytes toUIMessageStreamResponse() would send.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonSchema, streamText, tool } from 'ai';
import { MockLanguageModelV4, convertArrayToReadableStream } from 'ai/test';
import { z } from 'zod';

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finish = (unified) => ({ type: 'finish', finishReason: { unified, raw: unified }, usage });

// One model step streaming a call's input in fragments, then the provider's tool-call.
function callParts(id, toolName, fragments, input, extra = {}) {
  return [
    { type: 'tool-input-start', id, toolName, ...extra },
    ...fragments.map((delta) => ({ type: 'tool-input-delta', id, delta })),
    { type: 'tool-input-end', id },
    { type: 'tool-call', toolCallId: id, toolName, input: input ?? fragments.join('') },
  ];
}

// A model whose n-th call streams steps[n] (multi-step runs call it once per step).
function model(steps) {
  let n = 0;
  return new MockLanguageModelV4({
    doStream: async () => {
      const parts = steps[Math.min(n, steps.length - 1)];
      n += 1;
      return { stream: convertArrayToReadableStream([{ type: 'stream-start', warnings: [] }, ...parts]) };
    },
  });
}

const objectSchema = (properties, required = Object.keys(properties)) =>
  jsonSchema({ type: 'object', properties, required, additionalProperties: false });
const citySchema = objectSchema({ city: { type: 'string' } });

const weather = tool({
  description: 'The weather in a city',
  inputSchema: citySchema,
  execute: async ({ city }) => ({ city, degrees: 21 }),
});

const scenarios = {
  // A tool with execute: input streamed, then the output, then a second step of text.
  execute: () => ({
    tools: { weather },
    steps: [
      [...callParts('call_1', 'weather', ['{"ci', 'ty":"Pa', 'ris"}']), finish('tool-calls')],
      [{ type: 'text-start', id: 't1' }, { type: 'text-delta', id: 't1', delta: 'Sunny.' },
        { type: 'text-end', id: 't1' }, finish('stop')],
    ],
    maxSteps: 2,
  }),
  // A tool without execute: the stream ends at tool-input-available (a browser-side tool).
  no_execute: () => ({
    tools: { confirm: tool({ inputSchema: objectSchema({ question: { type: 'string' } }) }) },
    steps: [[...callParts('call_c', 'confirm', ['{"question":', '"Proceed?"}']), finish('tool-calls')]],
  }),
  // needsApproval: the call is announced, then a tool-approval-request; nothing runs.
  approval: () => ({
    tools: { deleteFile: tool({
      inputSchema: objectSchema({ path: { type: 'string' } }),
      needsApproval: true,
      execute: async () => 'deleted',
    }) },
    steps: [[...callParts('call_a', 'deleteFile', ['{"path":"/tmp/x"}']), finish('tool-calls')]],
  }),
  // Two calls in one step: the first needs approval, the second runs.
  approval_and_run: () => ({
    tools: {
      rm: tool({ inputSchema: objectSchema({ p: { type: 'string' } }), needsApproval: true,
        execute: async () => 'removed' }),
      ls: tool({ inputSchema: objectSchema({ p: { type: 'string' } }), execute: async ({ p }) => [p] }),
    },
    steps: [[...callParts('call_rm', 'rm', ['{"p":"x"}']), ...callParts('call_ls', 'ls', ['{"p":', '"y"}']),
      finish('tool-calls')]],
  }),
  // A generator tool: preliminary outputs, then the final one.
  generator: () => ({
    tools: { count: tool({
      inputSchema: objectSchema({ to: { type: 'integer' } }),
      async *execute({ to }) {
        for (let i = 1; i < to; i += 1) yield { progress: i };
        yield { done: to };
      },
    }) },
    steps: [[...callParts('call_g', 'count', ['{"to":', '3}']), finish('tool-calls')]],
  }),
  // The input the provider calls with differs from its streamed text (defaults applied).
  defaults: () => ({
    tools: { search: tool({
      inputSchema: objectSchema({ q: { type: 'string' }, limit: { type: 'integer', default: 10 } }, ['q']),
      execute: async ({ q }) => [q],
    }) },
    steps: [[...callParts('call_d', 'search', ['{"q":"x"}'], '{"q":"x","limit":10}'), finish('tool-calls')]],
  }),
  // repairToolCall: the streamed text is invalid, the repaired input runs.
  repair: () => ({
    tools: { weather: tool({
      inputSchema: z.object({ city: z.string() }).strict(),
      execute: async ({ city }) => ({ city, degrees: 21 }),
    }) },
    steps: [[...callParts('call_r', 'weather', ['{"town":"Paris"}']), finish('tool-calls')]],
    repair: async ({ toolCall }) => ({ ...toolCall, input: '{"city":"Paris"}' }),
  }),
  // An integer beyond 2^53 arrives rounded as a JavaScript number.
  big_int: () => ({
    tools: { lookup: tool({ inputSchema: objectSchema({ id: { type: 'integer' } }), execute: async ({ id }) => id }) },
    steps: [[...callParts('call_b', 'lookup', ['{"id":', '12345678901234567891}']), finish('tool-calls')]],
  }),
  // A text-input tool: the deltas concatenate to a raw string.
  text_input: () => ({
    tools: { sql: tool({ inputSchema: jsonSchema({ type: 'string' }), execute: async (q) => `ran ${q}` }) },
    steps: [[...callParts('call_t', 'sql', ['SELECT "a"', ' FROM t;'], JSON.stringify('SELECT "a" FROM t;'),
      { inputEncoding: 'text' }), finish('tool-calls')]],
  }),
  // Two steps, one call each, then text.
  multi_step: () => ({
    tools: { weather },
    steps: [
      [...callParts('call_s1', 'weather', ['{"city":"Oslo"}']), finish('tool-calls')],
      [...callParts('call_s2', 'weather', ['{"city":"Rome"}']), finish('tool-calls')],
      [{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'Done.' },
        { type: 'text-end', id: 't' }, finish('stop')],
    ],
    maxSteps: 3,
  }),
  // A turn cut off by the output token limit.
  length: () => ({
    tools: { weather },
    steps: [[{ type: 'tool-input-start', id: 'call_l', toolName: 'weather' },
      { type: 'tool-input-delta', id: 'call_l', delta: '{"city":"Par' }, finish('length')]],
  }),
  // Aborted while a call streams.
  abort: () => ({
    tools: { weather },
    steps: [[{ type: 'tool-input-start', id: 'call_x', toolName: 'weather' },
      { type: 'tool-input-delta', id: 'call_x', delta: '{"city":' }]],
    abortAfter: 2,
  }),
  // A tool whose execute throws.
  tool_error: () => ({
    tools: { fail: tool({ inputSchema: objectSchema({}), execute: async () => { throw new Error('boom'); } }) },
    steps: [[...callParts('call_e', 'fail', ['{}']), finish('tool-calls')]],
  }),
};

async function run(name) {
  const s = scenarios[name]();
  const controller = new AbortController();
  const steps = s.abortAfter === undefined ? s.steps : s.steps.map((parts) => parts.slice());
  let m = model(steps);
  if (s.abortAfter !== undefined) {
    // The model streams its parts, then waits until aborted (a stream cut mid-call).
    m = new MockLanguageModelV4({
      doStream: async ({ abortSignal }) => ({
        stream: new ReadableStream({
          start(c) {
            c.enqueue({ type: 'stream-start', warnings: [] });
            for (const p of steps[0]) c.enqueue(p);
            setTimeout(() => controller.abort(), 0);
            abortSignal?.addEventListener('abort', () => c.error(new DOMException('aborted', 'AbortError')));
          },
        }),
      }),
    });
  }
  const result = streamText({
    model: m,
    prompt: 'hi',
    tools: s.tools,
    stopWhen: ({ steps: done }) => done.length >= (s.maxSteps ?? 1),
    abortSignal: controller.signal,
    ...(s.repair ? { experimental_repairToolCall: s.repair } : {}),
  });
  const response = result.toUIMessageStreamResponse();
  return await response.text();
}

const out = process.argv[2];
mkdirSync(out, { recursive: true });
for (const name of Object.keys(scenarios)) {
  writeFileSync(join(out, `${name}.sse`), await run(name));
}
