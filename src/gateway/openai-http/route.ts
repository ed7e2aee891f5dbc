import type http from "node:http";
import { ErrorCodes } from "../../protocol/frames.js";
import type { GatewayContext } from "../context.js";
import type { HttpRoute } from "../http-routes.js";
import type { BrowserAccess } from "../origin.js";
import { readJsonBody } from "./body.js";
import { authenticateHttp, type HttpCaller } from "./caller.js";
import { httpErrorOf, OpenAiHttpError, sendHttpError } from "./errors.js";
import { chatCompletionRequest, responsesRequest, type TurnRequest } from "./requests.js";
import { runFailure } from "./run-failure.js";
import {
  chatChunk,
  chatCompletion,
  chatUsageChunk,
  finishReason,
  messageItem,
  messageItemId,
  outputText,
  responseObject,
  runIdOfResponse,
} from "./shapes.js";
import { SseStream } from "./sse.js";
import { MODEL_PREFIX, modelIds, type RunTarget, runTarget } from "./target.js";
import { finalText, runHttpTurn } from "./turn.js";

/** Which endpoints are on (gateway.http.endpoints.*.enabled, read once at start: gateway keys need a restart). */
export interface OpenAiEndpoints {
  chatCompletions: boolean;
  responses: boolean;
}

const CHAT = "/v1/chat/completions";
const RESPONSES = "/v1/responses";
const MODELS = "/v1/models";

/**
 * SPEC 26: the OpenAI-compatible HTTP API on the gateway's port (docs/openai-http.md). The route takes every
 * `/v1/` path, so a disabled endpoint or an unknown path is answered 404 in OpenAI's error shape, naming the key
 * that turns it on; nothing is read before the method and path are known to be its own.
 */
export function openAiHttpRoute(
  gw: GatewayContext,
  browsers: BrowserAccess | undefined,
  on: OpenAiEndpoints,
): HttpRoute {
  const anyOn = on.chatCompletions || on.responses;
  return {
    name: "openai-http",
    matches: (_method, path) => path.startsWith("/v1/") || path === "/v1",
    handle: (req, res, path) => {
      const method = req.method ?? "GET";
      const answer = (work: () => Promise<void>) =>
        work().catch((err: unknown) => {
          const e = httpErrorOf(err, gw.isTransientStoreError);
          // a bug or a broken store, not a refusal or a failed run (the run logs its own end)
          if (e.code === ErrorCodes.internal) gw.logger.error("openai-http request failed", { path, error: e.message });
          // a stream already under way cannot change its status: it is cut, and the client sees it end early
          if (res.headersSent) res.destroy();
          // a body left unread (refused before or while reading it) cannot be followed by another request
          else sendHttpError(res, e, { close: !req.complete });
        });
      if (path === CHAT)
        return answer(() =>
          post(method, on.chatCompletions, CHAT, "chatCompletions", () => chat(gw, browsers, req, res)),
        );
      if (path === RESPONSES)
        return answer(() =>
          post(method, on.responses, RESPONSES, "responses", () => responses(gw, browsers, req, res)),
        );
      if (path === MODELS || path.startsWith(`${MODELS}/`))
        return answer(async () => {
          if (!anyOn) throw disabled(MODELS, "chatCompletions or responses");
          if (method !== "GET" && method !== "HEAD") throw notAllowed(method, path, "GET");
          models(gw, browsers, req, res, path);
        });
      return answer(async () => {
        throw new OpenAiHttpError(404, `not found: ${method} ${path}`, { code: "not_found" });
      });
    },
  };
}

async function post(method: string, enabled: boolean, path: string, key: string, serve: () => Promise<void>) {
  if (!enabled) throw disabled(path, key);
  if (method !== "POST") throw notAllowed(method, path, "POST");
  await serve();
}

function disabled(path: string, key: string): OpenAiHttpError {
  return new OpenAiHttpError(
    404,
    `${path} is not enabled on this gateway (gateway.http.endpoints.${key}.enabled is false)`,
    { code: "endpoint_disabled" },
  );
}

function notAllowed(method: string, path: string, allow: string): OpenAiHttpError {
  return new OpenAiHttpError(405, `${method} is not allowed on ${path}: use ${allow}`, {
    code: "method_not_allowed",
    headers: { allow },
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, head = false): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(head ? undefined : text);
}

/** GET /v1/models and /v1/models/{id}: one model per agent (`loopgate/<agentId>`), then the aliases. */
function models(
  gw: GatewayContext,
  browsers: BrowserAccess | undefined,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  path: string,
): void {
  const caller = authenticateHttp(req, gw, browsers, "read");
  try {
    const config = gw.service.rt.config;
    const created = Math.floor(gw.now() / 1000);
    const entry = (id: string) => ({
      id,
      object: "model",
      created,
      owned_by: id.startsWith(MODEL_PREFIX) ? "loopgate" : "alias",
    });
    const ids = modelIds(config);
    const head = req.method === "HEAD";
    if (path === MODELS) {
      sendJson(res, 200, { object: "list", data: ids.map(entry) }, head);
      return;
    }
    const id = decodedModelId(path.slice(MODELS.length + 1));
    if (!ids.includes(id))
      throw new OpenAiHttpError(404, `model "${id}" does not exist on this gateway: ${ids.join(", ")}`, {
        code: "model_not_found",
      });
    sendJson(res, 200, entry(id), head);
  } finally {
    caller.release();
  }
}

function decodedModelId(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new OpenAiHttpError(400, "the model id in the path is not valid percent-encoding", {
      code: "invalid_request",
    });
  }
}

/** What both POST endpoints do before the run: auth, the body, the target. */
async function prepare(
  gw: GatewayContext,
  browsers: BrowserAccess | undefined,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  parse: (body: unknown) => TurnRequest,
): Promise<{ caller: HttpCaller; turn: TurnRequest; target: RunTarget; runId: string }> {
  // the body is read only for a caller that may send: an unauthenticated client cannot make the gateway buffer one
  const caller = authenticateHttp(req, gw, browsers, "write");
  // a client that went away no longer counts under the caps, as a closed WebSocket (its run may go on)
  res.once("close", caller.release);
  try {
    const body = await readJsonBody(req, {
      maxBytes: gw.limits.maxPayload,
      // as long as a WebSocket client has to complete its connect
      timeoutMs: gw.limits.handshakeTimeoutMs,
    });
    const turn = parse(body);
    const target = await targetOf(gw, caller, req, turn);
    return { caller, turn, target, runId: idempotencyKey(req) ?? gw.service.newRunId() };
  } catch (err) {
    caller.release();
    throw err;
  }
}

async function targetOf(
  gw: GatewayContext,
  caller: HttpCaller,
  req: http.IncomingMessage,
  turn: TurnRequest,
): Promise<RunTarget> {
  const newId = () => gw.service.newRunId();
  if (turn.previousResponseId === undefined) return runTarget(req, gw.service.rt.config, turn, newId);
  // previous_response_id continues that response's session (a session header still wins); a response in a session
  // the token may not use is "not found" like a made-up id, so its session's name does not leak in a refusal
  const runId = runIdOfResponse(turn.previousResponseId);
  const found = runId ? await gw.service.sessions.run(runId) : undefined;
  if (!found || !caller.access.sessionGranted(found.sessionKey))
    throw new OpenAiHttpError(404, `previous_response_id: no response "${turn.previousResponseId}" on this gateway`, {
      code: "response_not_found",
      param: "previous_response_id",
    });
  return runTarget(req, gw.service.rt.config, { ...turn, continues: found.sessionKey }, newId);
}

/** `Idempotency-Key`: a retried request (the openai client retries 409, 429 and 5xx) gets the same run, not a second one. */
function idempotencyKey(req: http.IncomingMessage): string | undefined {
  const v = req.headers["idempotency-key"];
  const key = (Array.isArray(v) ? v[0] : v)?.trim();
  return key ? `openai-${key}` : undefined;
}

/** A turn answered in one body (no `stream`): run to its end; a failed run is the request's error. */
async function completedTurn(
  gw: GatewayContext,
  caller: HttpCaller,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  turn: TurnRequest,
  target: RunTarget,
  runId: string,
) {
  const done = await runHttpTurn(gw, caller, { req, res }, turn, target, { runId });
  const failed = runFailure(done.final);
  if (failed) throw failed;
  return done;
}

function sseLimits(gw: GatewayContext) {
  return {
    maxBufferedBytes: gw.limits.maxBufferedBytes,
    slowConsumerMs: gw.limits.slowConsumerMs,
    now: () => gw.now(),
  };
}

async function chat(
  gw: GatewayContext,
  browsers: BrowserAccess | undefined,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const { caller, turn, target, runId } = await prepare(gw, browsers, req, res, chatCompletionRequest);
  const createdMs = gw.now();
  const model = turn.model;
  try {
    if (!turn.stream) {
      const done = await completedTurn(gw, caller, req, res, turn, target, runId);
      return sendJson(
        res,
        200,
        chatCompletion({ runId: done.runId, model, createdMs, final: done.final, text: finalText(done.final) }),
      );
    }
    const sse = new SseStream(res, sseLimits(gw));
    let id = runId;
    const done = await runHttpTurn(gw, caller, { req, res }, turn, target, {
      runId,
      onAccepted: (a) => {
        id = a.runId;
        sse.send(chatChunk({ runId: id, model, createdMs, delta: { role: "assistant", content: "" } }));
      },
      onDelta: (content) => sse.send(chatChunk({ runId: id, model, createdMs, delta: { content } })),
    });
    const failed = runFailure(done.final);
    // the stream is open: an error is a chunk of its own (OpenAI's client throws it), then the end
    if (failed) sse.send(failed.body());
    else {
      sse.send(chatChunk({ runId: id, model, createdMs, delta: {}, finish: finishReason(done.final) }));
      if (turn.includeUsage) sse.send(chatUsageChunk({ runId: id, model, createdMs, final: done.final }));
    }
    sse.done();
  } finally {
    caller.release();
  }
}

async function responses(
  gw: GatewayContext,
  browsers: BrowserAccess | undefined,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const { caller, turn, target, runId } = await prepare(gw, browsers, req, res, responsesRequest);
  const createdMs = gw.now();
  const model = turn.model;
  try {
    if (!turn.stream) {
      const done = await completedTurn(gw, caller, req, res, turn, target, runId);
      const text = finalText(done.final);
      return sendJson(
        res,
        200,
        responseObject({ runId: done.runId, model, createdMs, status: "completed", text, final: done.final }),
      );
    }
    const sse = new SseStream(res, sseLimits(gw));
    let seq = 0;
    const event = (type: string, data: Record<string, unknown>) =>
      sse.send({ type, sequence_number: seq++, ...data }, type);
    let id = runId;
    let streamed = "";
    const at = () => ({ item_id: messageItemId(id), output_index: 0, content_index: 0 });
    const done = await runHttpTurn(gw, caller, { req, res }, turn, target, {
      runId,
      onAccepted: (a) => {
        id = a.runId;
        const response = responseObject({ runId: id, model, createdMs, status: "in_progress" });
        event("response.created", { response });
        event("response.in_progress", { response });
        event("response.output_item.added", { output_index: 0, item: messageItem(id, "in_progress") });
        event("response.content_part.added", { ...at(), part: outputText("") });
      },
      onDelta: (delta) => {
        streamed += delta;
        event("response.output_text.delta", { ...at(), delta });
      },
    });
    const failed = runFailure(done.final);
    if (failed) {
      const error = { code: failed.code ?? "run_failed", message: failed.message };
      event("response.failed", {
        response: responseObject({ runId: id, model, createdMs, status: "failed", final: done.final, error }),
      });
    } else {
      // what the stream showed: every assistant delta of the run, as the text the client assembled
      event("response.output_text.done", { ...at(), text: streamed });
      event("response.content_part.done", { ...at(), part: outputText(streamed) });
      event("response.output_item.done", { output_index: 0, item: messageItem(id, "completed", streamed) });
      const response = responseObject({
        runId: id,
        model,
        createdMs,
        status: "completed",
        text: streamed,
        final: done.final,
      });
      event("response.completed", { response });
    }
    sse.end();
  } finally {
    caller.release();
  }
}
