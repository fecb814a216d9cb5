// Read a UI message stream (SSE bytes on stdin) as useChat does: the SDK's own event-stream
// parser and chunk schema (parseJsonEventStream + uiMessageChunkSchema), then its chat state
// (readUIMessageStream). An argument, if given, is the JSON of the assistant message the
// stream continues (as useChat continues it after the client's approvals). Prints one JSON object: the chunks the schema rejected, the
// errors the chat state raised, the finish reason, and the assistant message's parts.
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const bytes = new Uint8Array(Buffer.concat(chunks));

const rejected = [];
const errors = [];
let finishReason = null;
const parsed = parseJsonEventStream({
  stream: new ReadableStream({ start(c) { c.enqueue(bytes); c.close(); } }),
  schema: uiMessageChunkSchema,
});
const valid = parsed.pipeThrough(new TransformStream({
  transform(result, controller) {
    if (!result.success) {
      rejected.push(String(result.error?.message ?? result.error).slice(0, 300));
      return;
    }
    if (result.value.type === 'finish') finishReason = result.value.finishReason ?? null;
    controller.enqueue(result.value);
  },
}));
let message = null;
const previous = process.argv[2] ? JSON.parse(process.argv[2]) : undefined;
try {
  for await (const m of readUIMessageStream({
    message: previous,
    stream: valid,
    onError: (e) => errors.push(String(e?.message ?? e)),
    terminateOnError: true,
  })) {
    message = m;
  }
} catch (e) {
  errors.push(String(e?.message ?? e)); // the chat stops reading: status "error"
}
process.stdout.write(JSON.stringify({ rejected, errors, finishReason, parts: message?.parts ?? [] }));
