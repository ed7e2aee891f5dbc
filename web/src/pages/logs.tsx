import { useEffect, useRef, useState } from "preact/hooks";
import type { LogLine, LogsTailResult } from "../../../src/protocol/operator";
import type { ConsoleModel } from "../model";
import { AdminOnly, ErrorLine } from "./operator-common";

/** How often the tail asks for new lines: a log is read by a person, one second is live enough. */
const POLL_MS = 1000;
/** lines kept on the page; older ones scroll away */
const KEEP = 2000;
const LEVELS = ["debug", "info", "warn", "error"] as const;

/** The gateway log, live (logs.tail from a cursor, once a second), filtered by level. */
export function LogsPage(props: { model: ConsoleModel }) {
  return (
    <AdminOnly model={props.model} title="Logs">
      <LogTail model={props.model} />
    </AdminOnly>
  );
}

function LogTail(props: { model: ConsoleModel }) {
  const { model } = props;
  const [level, setLevel] = useState<(typeof LEVELS)[number]>("info");
  const [lines, setLines] = useState<LogLine[]>([]);
  const [file, setFile] = useState<string | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [paused, setPaused] = useState(false);
  const list = useRef<HTMLOListElement>(null);
  const follow = useRef(true);

  useEffect(() => {
    if (paused) return;
    let cursor: number | undefined;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setLines([]);
    const tick = async () => {
      try {
        const res = await model.gw.call<LogsTailResult>("logs.tail", {
          level,
          ...(cursor === undefined ? { limit: 500 } : { cursor }),
        });
        if (stopped) return;
        setFile(res.file);
        setError(undefined);
        if (res.lines.length || res.reset) {
          setLines((old) => (res.reset ? res.lines : [...old, ...res.lines]).slice(-KEEP));
        }
        cursor = res.cursor;
      } catch (err) {
        if (!stopped) setError((err as Error).message);
      }
      if (!stopped) timer = setTimeout(tick, POLL_MS);
    };
    void tick();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [model, level, paused]);

  // follows the newest line unless the reader scrolled up
  useEffect(() => {
    const el = list.current;
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  }, [lines]);

  // The tail asks the gateway for the new level on the next effect, after this render: until its answer replaces the
  // list, lines below the chosen level are hidden here, so the page never shows what the filter says it left out.
  const floor = LEVELS.indexOf(level);
  const shown = lines.filter((l) => l.level === undefined || LEVELS.indexOf(l.level) >= floor);

  return (
    <section aria-labelledby="logs-h">
      <h1 id="logs-h">Logs</h1>
      <div class="filters">
        <label>
          Level
          <select value={level} onChange={(e) => setLevel((e.target as HTMLSelectElement).value as typeof level)}>
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l} and above
              </option>
            ))}
          </select>
        </label>
        <button type="button" aria-pressed={paused} onClick={() => setPaused(!paused)}>
          {paused ? "Resume" : "Pause"}
        </button>
        <span class="hint">{file ? `${file} · live` : ""}</span>
      </div>
      <ErrorLine error={error} />
      <ol
        class="op-log"
        ref={list}
        data-testid="log-lines"
        aria-live="off"
        aria-label="Gateway log lines, newest last"
        onScroll={(e) => {
          const el = e.currentTarget;
          follow.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {shown.map((l, i) => (
          // a log has no ids; a line's place in this list is stable while it is shown
          <li key={i} class={l.level}>
            {l.text}
          </li>
        ))}
        {shown.length === 0 && <li class="empty">No lines yet at this level.</li>}
      </ol>
    </section>
  );
}
