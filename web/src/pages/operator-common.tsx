/**
 * What the operator pages (config, cron, skills and plugins, exec policy, logs) share: loading one RPC answer with
 * its error, and the rule that acting takes operator.admin (the gateway enforces it; the page only disables what
 * would be refused, and says why).
 */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import type { ConsoleModel } from "../model";
import "./operator.css";

export const ADMIN = "operator.admin";
export const NEEDS_ADMIN = "needs operator.admin: this token may look, not change";

export function isAdmin(model: ConsoleModel): boolean {
  return model.gw.scopes.includes(ADMIN);
}

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  reload(): Promise<void>;
}

/** One RPC's answer, read when the page opens (and again after each reconnect). */
export function useRpc<T>(model: ConsoleModel, method: string, params?: unknown): Loaded<T> {
  const [data, setData] = useState<T | undefined>();
  const [error, setError] = useState<string | undefined>();
  const key = JSON.stringify(params ?? null);
  const reload = useCallback(async () => {
    try {
      setData(await model.gw.call<T>(method, params));
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
    }
  }, [model, method, key]);
  useEffect(() => {
    void reload();
    return model.gw.onOpen(() => void reload());
  }, [reload, model]);
  return { data, error, reload };
}

/** Runs an action; its refusal is shown where the user acted, never swallowed. */
export function useAction(): {
  busy: boolean;
  error: string | undefined;
  run(fn: () => Promise<unknown>): Promise<boolean>;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const run = async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await fn();
      return true;
    } catch (err) {
      setError((err as Error).message);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

export function ErrorLine(props: { error: string | undefined }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {props.error}
    </p>
  );
}

/** A page that only operator.admin may read (config, exec policy, logs) says so instead of failing. */
export function AdminOnly(props: { model: ConsoleModel; title: string; children: ComponentChildren }) {
  if (isAdmin(props.model)) return <>{props.children}</>;
  return (
    <section aria-labelledby="admin-only-h">
      <h1 id="admin-only-h">{props.title}</h1>
      <p class="hint" data-testid="admin-only">
        This page needs the operator.admin scope; this token has {props.model.gw.scopes.join(", ") || "none"}.
      </p>
    </section>
  );
}

/**
 * An on/off switch that shows the new state at once and goes back if the gateway refuses (the refusal is shown by
 * the page); the state read back from the gateway wins as soon as it arrives.
 */
export function Switch(props: {
  checked: boolean;
  disabled: boolean;
  title?: string;
  label: string;
  on: string;
  off: string;
  onChange(next: boolean): Promise<boolean>;
}) {
  const [pending, setPending] = useState<boolean | undefined>();
  useEffect(() => setPending(undefined), [props.checked]);
  const shown = pending ?? props.checked;
  return (
    <label class="op-switch" title={props.title}>
      <input
        type="checkbox"
        checked={shown}
        disabled={props.disabled}
        onChange={async (e) => {
          const next = e.currentTarget.checked;
          setPending(next);
          if (!(await props.onChange(next))) setPending(undefined);
        }}
      />
      {shown ? props.on : props.off}
      <span class="sr-only"> ({props.label})</span>
    </label>
  );
}
