/**
 * One session: its transcript (current generation; compaction and reset rows shown as such; tool calls folded with
 * their results), the runs streaming into it live, and the composer (queue mode, receipt, stop, /new, /reset).
 */
import { useEffect, useState } from "preact/hooks";
import type { AgentAccepted, ChatAbortResult, ChatHistoryResult, HistoryEntry } from "../../../src/protocol/payloads";
import type { Receipt } from "../../../src/protocol/run";
import { shortKey, time } from "../format";
import { newIdempotencyKey } from "../gateway";
import { type ConsoleModel, type LiveRun, type ToolCall, useModel } from "../model";

/** A message row (chat.history spreads the stored message into the entry, in OpenClaw's shape); not a marker row. */
function messageOf(e: HistoryEntry): HistoryEntry | undefined {
  return e.role !== undefined ? e : undefined;
}

/** The first line of a collected turn (src/queue/collect.ts). */
const COLLECT_HEADER = "[Queued messages while agent was busy]";

type Part = { type: string; text?: string; thinking?: string; id?: string; name?: string; arguments?: unknown };

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return (content as Part[])
    .map((p) => (p.type === "text" ? (p.text ?? "") : p.type === "image" ? "[image]" : ""))
    .filter(Boolean)
    .join("\n");
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

function ToolView(props: { call: ToolCall; live?: boolean }) {
  const { call } = props;
  const state = call.result === undefined ? (props.live ? "running" : "no result") : call.isError ? "error" : "ok";
  return (
    <details class={`tool ${state}`} data-testid="tool">
      <summary>
        <span class="tool-name">{call.name}</span> <span class="status">{call.skipped ?? state}</span>
      </summary>
      <div class="tool-body">
        <h4>Arguments</h4>
        <pre>{json(call.args)}</pre>
        {call.partial !== undefined && call.result === undefined && (
          <>
            <h4>So far</h4>
            <pre>{call.partial}</pre>
          </>
        )}
        {call.result !== undefined && (
          <>
            <h4>Result</h4>
            <pre>{call.result}</pre>
          </>
        )}
      </div>
    </details>
  );
}

/** Transcript rows → turns: an assistant message's tool calls take their results (toolResult rows) along. */
function Transcript(props: { entries: HistoryEntry[] }) {
  const results = new Map<string, HistoryEntry>();
  for (const e of props.entries) {
    const m = messageOf(e);
    if (m?.role === "toolResult" && m.toolCallId) results.set(m.toolCallId, e);
  }
  return (
    <ol class="transcript" aria-label="Transcript">
      {props.entries.map((e) => {
        if (e.kind === "compaction") {
          return (
            <li key={e.seq} class="row compaction" data-testid="compaction">
              <details>
                <summary>Compaction: earlier messages were summarized</summary>
                <pre>{e.text ?? ""}</pre>
              </details>
            </li>
          );
        }
        if (e.kind === "reset") {
          return (
            <li key={e.seq} class="row reset">
              Session reset {e.text ? `(${e.text})` : ""}
            </li>
          );
        }
        const m = messageOf(e);
        if (!m || m.role === "toolResult") return null;
        if (m.role === "user") {
          const text = textOf(m.content);
          // collect mode (SPEC 2): the messages queued behind a run arrive as one turn that lists each of them
          const collected = text.startsWith(COLLECT_HEADER) ? (text.match(/^Queued #\d+$/gm) ?? []).length : 0;
          return (
            <li key={e.seq} class="row user" data-testid={collected ? "collected-turn" : "user-message"}>
              <div class="who">
                {collected ? `Collected turn · ${collected} messages` : "You"} · {time(e.createdAt)}
              </div>
              <div class="text">{text}</div>
            </li>
          );
        }
        const parts = Array.isArray(m.content) ? (m.content as Part[]) : [{ type: "text", text: String(m.content) }];
        const thinking = parts
          .filter((p) => p.type === "thinking")
          .map((p) => p.thinking ?? "")
          .join("\n");
        const text = parts
          .filter((p) => p.type === "text")
          .map((p) => p.text ?? "")
          .join("\n");
        const calls = parts.filter((p) => p.type === "toolCall");
        return (
          <li key={e.seq} class="row assistant" data-testid="assistant-message">
            <div class="who">Agent · {time(e.createdAt)}</div>
            {thinking && (
              <details class="thinking">
                <summary>Reasoning</summary>
                <pre>{thinking}</pre>
              </details>
            )}
            {text && <div class="text">{text}</div>}
            {calls.map((c) => {
              const r = results.get(String(c.id));
              return (
                <ToolView
                  key={c.id}
                  call={{
                    id: String(c.id),
                    name: String(c.name),
                    args: c.arguments,
                    result: r ? textOf(messageOf(r)?.content) : undefined,
                    isError: r ? messageOf(r)?.isError : undefined,
                  }}
                />
              );
            })}
          </li>
        );
      })}
    </ol>
  );
}

function LiveRunView(props: { run: LiveRun }) {
  const { run } = props;
  const text = run.blocks.length && !run.text ? run.blocks.join("\n\n") : run.text;
  return (
    <li class={`row assistant live ${run.state}`} data-testid="live-run" data-run={run.runId}>
      <div class="who">
        Agent · <span class={`status ${run.state}`}>{run.state}</span>
        {run.model && <> · {run.model}</>}
        {run.authProfile && <> · key {run.authProfile}</>}
        {run.retries > 0 && <> · {run.retries} retries</>}
        {run.fallbacks.length > 0 && <> · fallback {run.fallbacks.join(", ")}</>}
        {run.waiting && <> · waiting for {run.waiting}</>}
      </div>
      {run.thinking && (
        <details class="thinking">
          <summary>Reasoning</summary>
          <pre>{run.thinking}</pre>
        </details>
      )}
      {run.tools.map((t) => (
        <ToolView key={t.id} call={t} live={run.state === "running"} />
      ))}
      <div class="text" data-testid="live-text" aria-live="polite">
        {text}
      </div>
      {run.error && <p class="error">{run.error}</p>}
    </li>
  );
}

const MODES = ["followup", "steer", "collect", "interrupt"] as const;

function receiptText(r: Receipt | undefined): string {
  if (!r) return "accepted";
  switch (r.kind) {
    case "started":
      return "started a run";
    case "steered":
      return "steered into the running turn";
    case "interrupted":
      return `${r.command}: ${r.summary}; runs next`;
    case "queued":
      return `queued (${r.mode}), position ${r.position}`;
    case "collected":
      return `collected into the next turn (${r.count} messages)`;
    case "dropped":
      return `dropped: ${r.reason}`;
    case "rejected":
      return `rejected: ${r.reason}`;
  }
}

export function SessionPage(props: { model: ConsoleModel; sessionKey: string; writable: boolean }) {
  const { model, sessionKey, writable } = props;
  useModel(model);
  const [history, setHistory] = useState<ChatHistoryResult | undefined>();
  /** an earlier transcript generation to read; undefined follows the current one */
  const [generation, setGeneration] = useState<number | undefined>();
  const [historyError, setHistoryError] = useState<string | undefined>();
  const [message, setMessage] = useState("");
  const [mode, setMode] = useState<(typeof MODES)[number]>("followup");
  const [receipt, setReceipt] = useState<string | undefined>();
  const [reasoning, setReasoning] = useState(false);
  const [sendError, setSendError] = useState<string | undefined>();
  const hv = model.historyVersion.get(sessionKey) ?? 0;
  const open = model.gw.state.kind === "open";

  useEffect(() => {
    if (!model.historyVersion.has(sessionKey)) model.historyVersion.set(sessionKey, 0);
    if (!open) return;
    let live = true;
    model.gw
      .call<ChatHistoryResult>("chat.history", { sessionKey, limit: 200, ...(generation ? { generation } : {}) })
      .then((h) => {
        if (!live) return;
        setHistory({ ...h, messages: [...h.messages].sort((a, b) => a.seq - b.seq) });
        setHistoryError(undefined);
      })
      .catch((err: Error) => live && setHistoryError(err.message));
    return () => {
      live = false;
    };
  }, [sessionKey, hv, open, generation]);
  // another session: back to its current generation
  useEffect(() => setGeneration(undefined), [sessionKey]);

  // a finished run stays shown live until the transcript has its answer (an aborted or failed run may have none)
  const answered = new Set(history?.messages.filter((m) => messageOf(m)?.role === "assistant").map((m) => m.runId));
  const liveRuns = model
    .runsOf(sessionKey)
    .filter((r) => r.state === "running" || r.state === "queued" || !answered.has(r.runId));
  const session = model.sessions.find((s) => s.key === sessionKey);
  const busy = (session?.activity && session.activity.state !== "idle") || liveRuns.some((r) => r.state === "running");

  const send = async (text: string, queueMode?: string) => {
    setSendError(undefined);
    try {
      const res = await model.gw.call<AgentAccepted>("chat.send", {
        sessionKey,
        message: text,
        idempotencyKey: newIdempotencyKey(),
        ...(queueMode ? { queueMode } : {}),
        // the model's reasoning reaches clients only when the run asks for it (shown collapsed)
        ...(reasoning ? { reasoningLevel: "stream" } : {}),
      });
      setReceipt(`${receiptText(res.receipt)} · run ${res.runId.slice(0, 18)}`);
      return true;
    } catch (err) {
      setSendError((err as Error).message);
      return false;
    }
  };

  const stop = async () => {
    setSendError(undefined);
    try {
      const res = await model.gw.call<ChatAbortResult>("chat.abort", { sessionKey });
      setReceipt(res.aborted ? `stopped ${res.runIds.length} run(s)` : "nothing to stop");
    } catch (err) {
      setSendError((err as Error).message);
    }
  };

  return (
    <section aria-labelledby="session-h" class="session">
      <p class="crumbs">
        <a href="#/sessions">Sessions</a> /
      </p>
      <h1 id="session-h">{session?.label ?? shortKey(sessionKey)}</h1>
      <p class="meta">
        {sessionKey}
        {history && <> · generation {history.generation}</>}
        {session && <> · {session.totalTokens} tokens</>}
      </p>
      {session && session.generation > 1 && (
        <label class="generation">
          Generation{" "}
          <select
            value={generation ?? session.generation}
            onChange={(e) => {
              const g = Number((e.target as HTMLSelectElement).value);
              setGeneration(g === session.generation ? undefined : g);
            }}
          >
            {Array.from({ length: session.generation }, (_, i) => session.generation - i).map((g) => (
              <option key={g} value={g}>
                {g === session.generation ? `${g} (current)` : g}
              </option>
            ))}
          </select>
        </label>
      )}
      {historyError && (
        <p class="error" role="alert">
          {historyError}
        </p>
      )}
      {history && history.messages.length === 0 && liveRuns.length === 0 && <p class="empty">No messages yet.</p>}
      {history && <Transcript entries={history.messages} />}
      {liveRuns.length > 0 && generation === undefined && (
        <ol class="transcript live-runs" aria-label="Live runs">
          {liveRuns.map((r) => (
            <LiveRunView key={r.runId} run={r} />
          ))}
        </ol>
      )}
      <form
        class="composer"
        aria-label="Composer"
        onSubmit={async (e) => {
          e.preventDefault();
          const text = message.trim();
          if (!text) return;
          if (await send(text, mode)) setMessage("");
        }}
      >
        {!writable && (
          <p class="hint" data-testid="read-only-note">
            This token can read but not send or stop (it lacks operator.write).
          </p>
        )}
        <label for="composer-text">Message</label>
        <textarea
          id="composer-text"
          rows={3}
          value={message}
          disabled={!writable}
          onInput={(e) => setMessage((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey))
              (e.currentTarget.form as HTMLFormElement).requestSubmit();
          }}
        />
        <div class="composer-row">
          <label>
            Queue mode
            <select
              value={mode}
              disabled={!writable}
              onChange={(e) => setMode((e.target as HTMLSelectElement).value as (typeof MODES)[number])}
            >
              {MODES.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={!writable || !open}>
            Send
          </button>
          <button type="button" class="danger" disabled={!writable || !open || !busy} onClick={stop}>
            Stop
          </button>
          <button type="button" disabled={!writable || !open} onClick={() => send("/new")}>
            /new
          </button>
          <button type="button" disabled={!writable || !open} onClick={() => send("/reset")}>
            /reset
          </button>
          <label>
            <input
              type="checkbox"
              checked={reasoning}
              disabled={!writable}
              onChange={(e) => setReasoning((e.target as HTMLInputElement).checked)}
            />{" "}
            Stream reasoning
          </label>
        </div>
        <p class="receipt" role="status" aria-live="polite" data-testid="receipt">
          {receipt}
        </p>
        {sendError && (
          <p class="error" role="alert">
            {sendError}
          </p>
        )}
      </form>
    </section>
  );
}
