/**
 * One session: its transcript (current generation; compaction and reset rows shown as such; tool calls folded with
 * their results; runs that ended in error, timeout or abort say so), the runs streaming into it live with the
 * approvals they wait for, the session's switches (model, thinking, verbose), and the composer (queue mode,
 * receipt, stop, /new, /reset). The view opens at the newest message and follows a live run unless the reader
 * scrolled up; then a "new messages" button brings them back down.
 */
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { ThinkingLevel, VerboseLevel } from "../../../src/protocol/enums";
import type { AgentAccepted, ChatAbortResult, ChatHistoryResult, HistoryEntry } from "../../../src/protocol/payloads";
import type { Receipt } from "../../../src/protocol/run";
import type { PendingApproval } from "../approvals";
import { ApprovalCard } from "../components/approval-card";
import { RunDetail } from "../components/run-detail";
import { shortKey, time } from "../format";
import { newIdempotencyKey } from "../gateway";
import { Markdown } from "../markdown";
import { type ConsoleModel, type LiveRun, type ToolCall, useModel } from "../model";

const THINKING: readonly ThinkingLevel[] = ["off", "minimal", "low", "medium", "high", "xhigh", "adaptive"];
const VERBOSE: readonly VerboseLevel[] = ["off", "on", "full"];

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

function ToolView(props: { call: ToolCall; live?: boolean; waiting?: boolean }) {
  const { call } = props;
  const state =
    call.result === undefined
      ? props.waiting
        ? "waiting for approval"
        : props.live
          ? "running"
          : "no result"
      : call.isError
        ? "error"
        : "ok";
  return (
    <details class={`tool ${state === "waiting for approval" ? "waiting" : state}`} data-testid="tool">
      <summary>
        <span class="tool-name">{call.name}</span>{" "}
        <span class={`status ${state === "waiting for approval" ? "waiting" : state}`}>{call.skipped ?? state}</span>
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

/** How a run that did not end well ended, from its last row's errorKind (finish.ts: "timeout", "aborted", …). */
function failureLabel(kind: string | undefined): string {
  if (kind === "timeout") return "Timed out";
  if (kind === "aborted") return "Stopped";
  return "Failed";
}

function RunFailure(props: { kind?: string; message: string }) {
  return (
    <p class="error run-failure" data-testid="run-failure" data-kind={props.kind}>
      <strong>{failureLabel(props.kind)}</strong> · {props.message}
    </p>
  );
}

/** A "Run details" toggle, opening the run's details under the row (the same view as the Runs page). */
function RunDetails(props: { model: ConsoleModel; runId: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" class="link run-details" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? "Hide run details" : "Run details"}
      </button>
      {open && <RunDetail model={props.model} runId={props.runId} onClose={() => setOpen(false)} />}
    </>
  );
}

/** Transcript rows → turns: an assistant message's tool calls take their results (toolResult rows) along. */
function Transcript(props: { entries: HistoryEntry[]; model: ConsoleModel; live: ReadonlySet<string> }) {
  const results = new Map<string, HistoryEntry>();
  /** the last assistant row of each run carries the run's details toggle */
  const lastOfRun = new Map<string, number>();
  for (const e of props.entries) {
    const m = messageOf(e);
    if (m?.role === "toolResult" && m.toolCallId) results.set(m.toolCallId, e);
    if (m?.role === "assistant" && e.runId) lastOfRun.set(e.runId, e.seq);
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
        // the answer of a run still going is shown by its live card (tool calls, approvals, text), not twice
        if (m.role === "assistant" && e.runId && props.live.has(e.runId)) return null;
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
        const failed = m.errorMessage !== undefined;
        return (
          <li
            key={e.seq}
            class={`row assistant${failed ? " failed" : ""}`}
            data-testid={failed ? "failed-run" : "assistant-message"}
          >
            <div class="who">Agent · {time(e.createdAt)}</div>
            {thinking && (
              <details class="thinking">
                <summary>Reasoning</summary>
                <pre>{thinking}</pre>
              </details>
            )}
            {text && <Markdown class="text" text={text} />}
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
            {failed && <RunFailure kind={m.errorKind} message={m.errorMessage ?? ""} />}
            {e.runId && lastOfRun.get(e.runId) === e.seq && <RunDetails model={props.model} runId={e.runId} />}
          </li>
        );
      })}
    </ol>
  );
}

/** The approval a live run waits for: the approver's full entry, else what the run's lifecycle said (read-only). */
function waitingApproval(model: ConsoleModel, run: LiveRun): PendingApproval | undefined {
  const pending = model.approvals.filter((a) => a.runId === run.runId);
  if (pending.length) return pending[0];
  if (!run.approval) return undefined;
  return {
    kind: "exec",
    id: run.approval.id,
    sessionKey: run.sessionKey,
    runId: run.runId,
    title: run.waiting?.replace(/^approval of /, "") ?? "a command",
    subject: "waiting for approval",
    expiresAtMs: run.approval.expiresAtMs,
  };
}

function LiveRunView(props: { run: LiveRun; model: ConsoleModel }) {
  const { run, model } = props;
  const text = run.blocks.length && !run.text ? run.blocks.join("\n\n") : run.text;
  const approvals = model.approvals.filter((a) => a.runId === run.runId);
  const approval = waitingApproval(model, run);
  const pendingCalls = run.tools.filter((t) => t.result === undefined);
  /** the tool call an approval is for: named by the approval, else the newest call without a result */
  const waitingCall = approval && (approval.toolCallId ?? pendingCalls.at(-1)?.id);
  const failed = run.state === "error" || run.state === "timeout" || run.state === "aborted";
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
        <ToolView key={t.id} call={t} live={run.state === "running"} waiting={t.id === waitingCall} />
      ))}
      {(approvals.length ? approvals : approval ? [approval] : []).map((a) => (
        <ApprovalCard key={`${a.kind}:${a.id}`} model={model} approval={a} />
      ))}
      <div data-testid="live-text" aria-live="polite">
        <Markdown class="text" text={text} />
      </div>
      {failed && run.error && <RunFailure kind={run.state === "error" ? "error" : run.state} message={run.error} />}
    </li>
  );
}

/**
 * Keeps the newest message in view: on open, and as a live run grows, unless the reader scrolled up. Whether the
 * reader was at the bottom is read against the page's height before this render (the scroll position is current,
 * the height is the one the last render left), so a scroll up just before new text came is not undone.
 */
function useFollow(sessionKey: string, ready: boolean, signature: string): { behind: boolean; toBottom(): void } {
  const [behind, setBehind] = useState(false);
  const opened = useRef<string | undefined>(undefined);
  const lastHeight = useRef(0);
  const toBottom = () => {
    setBehind(false);
    window.scrollTo(0, document.documentElement.scrollHeight);
    lastHeight.current = document.documentElement.scrollHeight;
  };
  useEffect(() => {
    const onScroll = () => {
      if (window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48) setBehind(false);
    };
    addEventListener("scroll", onScroll, { passive: true });
    return () => removeEventListener("scroll", onScroll);
  }, []);
  useLayoutEffect(() => {
    if (!ready) return;
    const height = document.documentElement.scrollHeight;
    const wasAtBottom = window.innerHeight + window.scrollY >= lastHeight.current - 48;
    if (opened.current !== sessionKey) {
      opened.current = sessionKey;
      toBottom();
    } else if (wasAtBottom) toBottom();
    else if (height > lastHeight.current) setBehind(true);
    lastHeight.current = document.documentElement.scrollHeight;
  }, [sessionKey, ready, signature]);
  return { behind, toBottom };
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

  // a finished run stays shown live until the transcript has its answer or its failure; one that left no row (it
  // failed before its first) only until something newer is in the transcript
  const answered = new Set(history?.messages.filter((m) => messageOf(m)?.role === "assistant").map((m) => m.runId));
  const newest = history?.messages.at(-1)?.createdAt ?? 0;
  const liveRuns = model
    .runsOf(sessionKey)
    .filter(
      (r) =>
        r.state === "running" ||
        r.state === "queued" ||
        (!answered.has(r.runId) && (r.endedAt ?? Number.POSITIVE_INFINITY) >= newest),
    );
  const session = model.sessions.find((s) => s.key === sessionKey);
  const busy = (session?.activity && session.activity.state !== "idle") || liveRuns.some((r) => r.state === "running");

  const signature = [
    history?.generation,
    history?.messages.length,
    ...liveRuns.map((r) => `${r.state}:${r.text.length}:${r.blocks.length}:${r.tools.length}:${r.thinking.length}`),
    model.approvals.filter((a) => a.sessionKey === sessionKey).length,
  ].join("|");
  const follow = useFollow(sessionKey, history !== undefined, signature);

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
      follow.toBottom();
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
      <SessionSwitches model={model} sessionKey={sessionKey} writable={writable} />
      {historyError && (
        <p class="error" role="alert">
          {historyError}
        </p>
      )}
      {history && history.messages.length === 0 && liveRuns.length === 0 && <p class="empty">No messages yet.</p>}
      {history && (
        <Transcript
          entries={history.messages}
          model={model}
          live={new Set(liveRuns.filter((r) => r.state === "running" || r.state === "queued").map((r) => r.runId))}
        />
      )}
      {liveRuns.length > 0 && generation === undefined && (
        <ol class="transcript live-runs" aria-label="Live runs">
          {liveRuns.map((r) => (
            <LiveRunView key={r.runId} run={r} model={model} />
          ))}
        </ol>
      )}
      {follow.behind && (
        <button type="button" class="pill" data-testid="new-messages" onClick={follow.toBottom}>
          New messages ↓
        </button>
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
          aria-describedby="composer-keys"
          onKeyDown={(e) => {
            // Enter sends, Shift+Enter is a new line; Enter that confirms an input method's composition is neither
            if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              (e.currentTarget.form as HTMLFormElement).requestSubmit();
            }
          }}
        />
        <p id="composer-keys" class="hint keys">
          Enter sends · Shift+Enter adds a new line
        </p>
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

/** The session's model, thinking level and verbose level (sessions.patch); "default" clears the override. */
function SessionSwitches(props: { model: ConsoleModel; sessionKey: string; writable: boolean }) {
  const { model, sessionKey, writable } = props;
  const session = model.sessions.find((s) => s.key === sessionKey);
  const [error, setError] = useState<string | undefined>();
  const [saved, setSaved] = useState<string | undefined>();
  const patch = async (field: "model" | "thinkingLevel" | "verboseLevel", value: string) => {
    setError(undefined);
    setSaved(undefined);
    try {
      await model.gw.call("sessions.patch", { key: sessionKey, [field]: value === "" ? null : value });
      await model.refreshSessions();
      setSaved(`${field === "model" ? "model" : field === "thinkingLevel" ? "thinking" : "verbose"} saved`);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const defaultModel = model.modelOf(session ? { ...session, model: undefined } : undefined);
  const models = model.models.map((m) => m.ref);
  if (session?.model && !models.includes(session.model)) models.push(session.model);
  const disabled = !writable || !session || model.gw.state.kind !== "open";
  return (
    <fieldset class="switches" aria-label="Session settings">
      <label>
        Model
        <select
          value={session?.model ?? ""}
          disabled={disabled}
          onChange={(e) => patch("model", (e.target as HTMLSelectElement).value)}
        >
          <option value="">default{defaultModel ? ` (${defaultModel})` : ""}</option>
          {models.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
      </label>
      <label>
        Thinking
        <select
          value={session?.thinkingLevel ?? ""}
          disabled={disabled}
          onChange={(e) => patch("thinkingLevel", (e.target as HTMLSelectElement).value)}
        >
          <option value="">default</option>
          {THINKING.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <label>
        Verbose
        <select
          value={session?.verboseLevel ?? ""}
          disabled={disabled}
          onChange={(e) => patch("verboseLevel", (e.target as HTMLSelectElement).value)}
        >
          <option value="">default</option>
          {VERBOSE.map((v) => (
            <option key={v} value={v}>
              {v}
            </option>
          ))}
        </select>
      </label>
      <span class="hint" role="status" data-testid="switch-status">
        {saved}
      </span>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </fieldset>
  );
}
