/**
 * A real runtime for run-level tests: a SQLite file, the real openai-completions provider, and the fake model
 * server speaking the real Chat Completions wire format on 127.0.0.1. Only the model's answers are scripted.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "../../config/load.js";
import { silentLogger } from "../../infra/logger.js";
import { composeSqliteNode } from "../../node/compose.js";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { SqliteStoreAdapter } from "../../storage/sqlite-adapter.js";
import { SqliteStore } from "../../storage/sqlite-store.js";
import { type CapturedRequest, type FakeTurn, startFakeModelServer } from "../../testing/fake-model-server.js";
import type { Tool } from "../../tools/types.js";
import type { AgentRuntime } from "../runtime.js";
import type { AgentService } from "../service.js";

/** The fake server's own count of a request's tokens (what it reports as usage and holds against the window). */
export function requestTokens(req: CapturedRequest): number {
  const { messages, tools } = req.body as { messages?: unknown; tools?: unknown };
  return Math.ceil(JSON.stringify({ messages, tools }).length / 4);
}

export function isSummaryRequest(req: CapturedRequest): boolean {
  return JSON.stringify(req.body.messages).includes("working memory of an AI assistant");
}

export interface RunHarness {
  rt: AgentRuntime;
  service: AgentService;
  store: SqliteStore;
  events: AgentEvent[];
  requests: CapturedRequest[];
  enqueue(...turns: FakeTurn[]): void;
  /** sends one message and waits for its final */
  send(message: string, extra?: Record<string, unknown>): ReturnType<AgentService["final"]>;
  close(): Promise<void>;
}

/**
 * `respond` answers when nothing is queued. `config` is merged over a config whose default model is `fake/m`
 * (provider `fake` on the fake server, `window` tokens) with the minimal system prompt.
 */
export async function startRunHarness(opts: {
  window?: number;
  respond?: (req: CapturedRequest) => FakeTurn;
  config?: (baseUrl: string) => Record<string, unknown>;
  /** tools beside the built-ins */
  tools?: Tool[];
  /** "embedded" composes the node a `loopgate agent --local` run gets (spend control included); default "test" */
  role?: "test" | "embedded";
}): Promise<RunHarness> {
  const server = await startFakeModelServer({ respond: opts.respond });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-run-"));
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  const base = {
    agents: { defaults: { model: { primary: "fake/m" } } },
    models: {
      providers: {
        fake: {
          api: "openai-completions",
          baseUrl: server.baseUrl,
          apiKey: "x",
          models: [{ id: "m", contextWindow: opts.window ?? 128000, maxTokens: 256 }],
        },
      },
    },
    messages: { queue: { debounceMs: 0 } },
  };
  const node = composeSqliteNode({
    role: opts.role ?? "test",
    config: parseConfig({ ...base, ...opts.config?.(server.baseUrl) }),
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    logger: silentLogger,
    // These tests are about runs, not the exec policy (exec-approvals tests cover it): exec runs as in `--local`,
    // unless a test's config sets tools.exec.security.
    execSecurityDefault: "full",
    tools: opts.tools,
  });
  const { runtime: rt, service } = node;
  const events: AgentEvent[] = [];
  rt.bus.subscribe((ev) => events.push(ev));
  let n = 0;
  return {
    rt,
    service,
    store,
    events,
    requests: server.requests,
    enqueue: (...turns) => server.enqueue(...turns),
    send: async (message, extra = {}) => {
      const accepted = service.accept({
        message,
        idempotencyKey: `m${++n}`,
        sessionKey: "agent:main:test",
        promptMode: "minimal",
        ...extra,
      });
      return service.final((await accepted).runId);
    },
    close: async () => {
      await server.close();
      await node.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
