/**
 * The operator pages, each loaded when first opened (its own chunk, with operator.css): the first page's bundle
 * stays the sessions view's, whatever these grow to.
 */
import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { ConsoleModel } from "../model";

type Page = FunctionComponent<{ model: ConsoleModel }>;

const loaders = {
  config: () => import("./config").then((m) => m.ConfigPage),
  cron: () => import("./cron").then((m) => m.CronPage),
  skills: () => import("./skills").then((m) => m.SkillsPage),
  "exec-policy": () => import("./exec-policy").then((m) => m.ExecPolicyPage),
  logs: () => import("./logs").then((m) => m.LogsPage),
} satisfies Record<string, () => Promise<Page>>;

export type OperatorPageName = keyof typeof loaders;

export function isOperatorPage(name: string): name is OperatorPageName {
  return Object.hasOwn(loaders, name);
}

export function OperatorPage(props: { name: OperatorPageName; model: ConsoleModel }) {
  const [page, setPage] = useState<{ name: string; C: Page } | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    let live = true;
    loaders[props.name]().then(
      (C) => live && setPage({ name: props.name, C }),
      (err: Error) => live && setError(`this page could not be loaded: ${err.message}`),
    );
    return () => {
      live = false;
    };
  }, [props.name]);
  if (error) {
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  }
  if (!page || page.name !== props.name) return <p class="hint">Loading…</p>;
  return <page.C model={props.model} />;
}
