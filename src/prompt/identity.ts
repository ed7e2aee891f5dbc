import { readFile } from "node:fs/promises";
import path from "node:path";

export interface IdentityFields {
  name?: string;
  emoji?: string;
  avatar?: string;
}

/**
 * The agent's identity as its IDENTITY.md states it (the bootstrap file the agent writes on its first run):
 * `- Name: …`, `- Emoji: …`, `- Avatar: …` lines, in OpenClaw's Markdown forms (`**Name:**`, `Name: `). A value in
 * parentheses is the starter file's placeholder ("(not chosen yet)") and means not set. A missing file is no
 * identity.
 */
export function parseIdentity(markdown: string): IdentityFields {
  const out: IdentityFields = {};
  for (const line of markdown.split("\n")) {
    const m = line.match(
      /^\s*(?:[-*+]\s+)?(?:\*\*|__)?(name|emoji|avatar)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.*?)\s*$/i,
    );
    if (!m) continue;
    const field = m[1].toLowerCase() as keyof IdentityFields;
    const value = m[2].replace(/^(\*\*|__)|(\*\*|__)$/g, "").trim();
    if (!value || value.startsWith("(") || out[field] !== undefined) continue;
    out[field] = value;
  }
  return out;
}

export async function readIdentity(workspaceDir: string): Promise<IdentityFields> {
  try {
    return parseIdentity(await readFile(path.join(workspaceDir, "IDENTITY.md"), "utf8"));
  } catch {
    return {};
  }
}
