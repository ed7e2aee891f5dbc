import type http from "node:http";
import { findLimitProblem } from "../../protocol/limits.js";
import { formatBytes } from "../../tools/image-prepare.js";
import { OpenAiHttpError } from "./errors.js";

export interface BodyLimits {
  /** the largest body accepted (gateway.maxPayload, the WebSocket frame limit) */
  maxBytes: number;
  /** the whole body must have arrived by then, from the request's start (a slowloris client holds a socket) */
  timeoutMs: number;
}

/**
 * Reads a JSON request body within the limits: a declared `content-length` over the limit is refused before a byte
 * is read, a body that grows past it is cut off there, one still incomplete after `timeoutMs` is refused (408).
 * The JSON's structure (nesting, keys, values) is checked on the raw bytes before it is parsed, with the WebSocket
 * frames' limits (protocol/limits.ts), so a body built to be expensive to parse costs its first kilobytes only.
 * Every refusal says what was wrong; a body left unread closes the connection after the answer.
 */
export async function readJsonBody(req: http.IncomingMessage, limits: BodyLimits): Promise<unknown> {
  const bytes = await readBody(req, limits);
  if (bytes.length === 0) throw new OpenAiHttpError(400, "the request body is empty: send a JSON object");
  const problem = findLimitProblem(bytes);
  if (problem) {
    throw new OpenAiHttpError(400, `${problem.path.replace(/^frame/, "body")}: ${problem.message}`, {
      code: "body_too_complex",
    });
  }
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw new OpenAiHttpError(400, `the request body is not valid JSON: ${(err as Error).message}`, {
      code: "invalid_json",
    });
  }
}

function tooLarge(what: string, maxBytes: number): OpenAiHttpError {
  return new OpenAiHttpError(
    413,
    `the request body ${what} is over the gateway's limit of ${formatBytes(maxBytes)} (gateway.maxPayload)`,
    { code: "request_too_large" },
  );
}

function readBody(req: http.IncomingMessage, limits: BodyLimits): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    return Promise.reject(tooLarge(`(content-length ${declared} bytes)`, limits.maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (err: Error | undefined, body?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      // nothing more of this body is wanted; what still arrives is discarded until the socket closes
      if (err) req.resume();
      if (err) reject(err);
      else resolve(body ?? Buffer.alloc(0));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBytes) return finish(tooLarge(`(over ${size} bytes so far)`, limits.maxBytes));
      chunks.push(chunk);
    };
    const onEnd = () => finish(undefined, Buffer.concat(chunks, size));
    const onError = (err: Error) =>
      finish(new OpenAiHttpError(400, `the request body could not be read: ${err.message}`));
    const timer = setTimeout(
      () =>
        finish(
          new OpenAiHttpError(
            408,
            `the request body did not arrive within ${limits.timeoutMs} ms (${size} bytes came); send it at once`,
            { code: "body_timeout" },
          ),
        ),
      limits.timeoutMs,
    );
    timer.unref();
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}
