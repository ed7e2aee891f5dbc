import { createHash } from "node:crypto";
import { type Dirent, readdirSync, statSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { parseYaml } from "../infra/lazy-yaml.js";

export const SKILL_FILE = "SKILL.md";
export const DEFAULT_MAX_SKILLS_IN_PROMPT = 150;
export const DEFAULT_MAX_SKILLS_PROMPT_CHARS = 18_000;

export interface Skill {
  name: string;
  description: string;
  /** Absolute path of SKILL.md; the prompt lists it so the model can `read` the instructions on demand. */
  location: string;
  /** Absolute path of the skill folder (scripts and assets live beside SKILL.md). */
  dir: string;
  /** Env vars that must be set for the skill to work (front matter `env: [A, B]`). */
  requiredEnv: string[];
  /** Env vars the skill injects into exec (front matter `env: { A: "x" }`). */
  env: Record<string, string>;
}

export interface LoadSkillsResult {
  skills: Skill[];
  warnings: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type ParseResult = { ok: true; skill: Omit<Skill, "location" | "dir"> } | { ok: false; reason: string };

function frontMatterBlock(text: string): string | undefined {
  // Editors on Windows add a BOM and CRLF line ends; neither should make a skill disappear.
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trim() !== "---") return undefined;
  const end = lines.findIndex((line, i) => i > 0 && line.trim() === "---");
  if (end < 0) return undefined;
  return lines.slice(1, end).join("\n");
}

function oneLine(value: string): string {
  return value.replace(/\s+/g, " ").trim();
}

function parseEnvField(value: unknown): { requiredEnv: string[]; env: Record<string, string> } | string {
  if (value === undefined || value === null) return { requiredEnv: [], env: {} };
  if (Array.isArray(value)) {
    const names: string[] = [];
    for (const item of value) {
      if (typeof item !== "string" || !ENV_NAME.test(item))
        return `env: ${JSON.stringify(item)} is not an env var name`;
      if (!names.includes(item)) names.push(item);
    }
    return { requiredEnv: names, env: {} };
  }
  if (typeof value === "object") {
    const env: Record<string, string> = {};
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      if (!ENV_NAME.test(key)) return `env: ${JSON.stringify(key)} is not an env var name`;
      // YAML turns `PORT: 8080` into a number and `DEBUG: true` into a boolean; the env only holds strings.
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") env[key] = String(v);
      else return `env.${key} must be a string, number or boolean`;
    }
    return { requiredEnv: [], env };
  }
  return "env must be a list of variable names or a map of variables to values";
}

export function parseSkillFile(text: string): ParseResult {
  const block = frontMatterBlock(text);
  if (block === undefined) return { ok: false, reason: "no front matter (expected a --- block at the top)" };
  let data: unknown;
  try {
    data = parseYaml(block);
  } catch (err) {
    return { ok: false, reason: `front matter is not valid YAML: ${oneLine((err as Error).message)}` };
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return { ok: false, reason: "front matter must be a YAML map with name and description" };
  }
  const fm = data as Record<string, unknown>;
  if (typeof fm.name !== "string" || oneLine(fm.name) === "") return { ok: false, reason: "missing name" };
  if (typeof fm.description !== "string" || oneLine(fm.description) === "") {
    return { ok: false, reason: "missing description" };
  }
  const env = parseEnvField(fm.env);
  if (typeof env === "string") return { ok: false, reason: env };
  return {
    ok: true,
    skill: { name: oneLine(fm.name), description: oneLine(fm.description), ...env },
  };
}

/** Immediate subfolders, sorted so that load order (and thus clash resolution) does not depend on the fs. */
async function listSubfolders(dir: string): Promise<string[] | undefined> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    throw err;
  }
  const names: string[] = [];
  for (const entry of entries) {
    // Hidden folders are editor/VCS state (.git, .DS_Store dirs), never skills.
    if (entry.name.startsWith(".")) continue;
    // Symlinked skill folders are common (a shared skills checkout linked into several workspaces).
    if (entry.isDirectory() || entry.isSymbolicLink()) names.push(entry.name);
  }
  return names.sort();
}

export async function loadSkills(dirs: string[]): Promise<LoadSkillsResult> {
  const skills: Skill[] = [];
  const warnings: string[] = [];
  const byName = new Map<string, Skill>();
  // The workspace `skills/` dir is often also listed in config; scanning it twice would report every skill in it
  // as clashing with itself.
  for (const dir of [...new Set(dirs.map((d) => path.resolve(d)))]) {
    let folders: string[] | undefined;
    try {
      folders = await listSubfolders(dir);
    } catch (err) {
      warnings.push(`skills dir ${dir} could not be read: ${(err as Error).message}`);
      continue;
    }
    if (!folders) continue;
    for (const folder of folders) {
      const skillDir = path.join(dir, folder);
      const location = path.join(skillDir, SKILL_FILE);
      let text: string;
      try {
        text = await readFile(location, "utf8");
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // A folder without SKILL.md is just a folder (or a dangling symlink); not worth a warning.
        if (code === "ENOENT" || code === "ENOTDIR") continue;
        warnings.push(`${location}: could not be read: ${(err as Error).message}`);
        continue;
      }
      const parsed = parseSkillFile(text);
      if (!parsed.ok) {
        warnings.push(`${location}: ${parsed.reason}; skill skipped`);
        continue;
      }
      const existing = byName.get(parsed.skill.name);
      if (existing) {
        // Across dirs the first one wins silently: that is how a workspace skill overrides a shared one.
        // Within one dir a clash is a mistake the user should hear about.
        if (existing.dir.startsWith(dir + path.sep)) {
          warnings.push(
            `${location}: skill name "${parsed.skill.name}" is already used by ${existing.location}; skipped`,
          );
        }
        continue;
      }
      const skill: Skill = { ...parsed.skill, location, dir: skillDir };
      byName.set(skill.name, skill);
      skills.push(skill);
    }
  }
  return { skills, warnings };
}

/** Names of required env vars that are neither in `env` nor provided by the skill itself. */
export function missingSkillEnv(skill: Skill, env: Record<string, string | undefined> = process.env): string[] {
  return skill.requiredEnv.filter((name) => {
    const value = env[name] ?? skill.env[name];
    return value === undefined || value === "";
  });
}

/**
 * Skills whose required env is missing are held back from the prompt: the model would pick them and then fail
 * in exec, which costs a turn and confuses the user more than the skill's absence does.
 */
export function eligibleSkills(
  skills: Skill[],
  env: Record<string, string | undefined> = process.env,
): { eligible: Skill[]; ineligible: Array<{ skill: Skill; missingEnv: string[] }> } {
  const eligible: Skill[] = [];
  const ineligible: Array<{ skill: Skill; missingEnv: string[] }> = [];
  for (const skill of skills) {
    const missing = missingSkillEnv(skill, env);
    if (missing.length === 0) eligible.push(skill);
    else ineligible.push({ skill, missingEnv: missing });
  }
  return { eligible, ineligible };
}

/*
 * Skill snapshots.
 *
 * Decision: a session takes a snapshot at its first run and reuses it on later runs. It is retaken after
 * `/new` or `/reset`, or when the fingerprint of the skill dirs changed (a skill added, removed or its SKILL.md
 * edited). Reuse keeps the skills block of the system prompt byte-identical between turns, so provider prompt
 * caches stay warm; checking the fingerprint first costs only a few readdir/stat calls and no file reads, so
 * it is cheap enough to do every run, and it prevents the worse failure of a stale list that names a deleted
 * skill (the model would try to read a file that is gone) or hides a skill the user just installed.
 */

export interface SkillSnapshot {
  skills: Skill[];
  warnings: string[];
  fingerprint: string;
  /** Epoch ms, from the injected clock. */
  takenAt: number;
}

/**
 * Hash of each dir's subfolder listing plus SKILL.md mtime (ns) and size. Nanosecond mtimes make an in-place
 * edit visible even when it keeps the size and lands within the same millisecond.
 */
export async function skillsFingerprint(dirs: string[]): Promise<string> {
  // Synchronous fs on purpose: this runs on every turn, and a handful of readdir/stat calls cost less than as many
  // thread-pool round trips.
  const hash = createHash("sha256");
  for (const rawDir of dirs) {
    const dir = path.resolve(rawDir);
    hash.update(`dir\0${dir}\0`);
    let folders: string[] | undefined;
    try {
      folders = listSubfoldersSync(dir);
    } catch (err) {
      hash.update(`error\0${(err as NodeJS.ErrnoException).code ?? "unknown"}\0`);
      continue;
    }
    if (!folders) {
      hash.update("missing\0");
      continue;
    }
    for (const folder of folders) {
      const s = statSync(path.join(dir, folder, SKILL_FILE), { bigint: true, throwIfNoEntry: false });
      hash.update(s ? `${folder}\0${s.mtimeNs}\0${s.size}\0` : `${folder}\0none\0`);
    }
  }
  return hash.digest("hex");
}

function listSubfoldersSync(dir: string): string[] | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  // same rule as listSubfolders: hidden folders are never skills; symlinked skill folders count
  return entries
    .filter((e) => !e.name.startsWith(".") && (e.isDirectory() || e.isSymbolicLink()))
    .map((e) => e.name)
    .sort();
}

export async function createSkillSnapshot(dirs: string[], opts: { now?: Date } = {}): Promise<SkillSnapshot> {
  // Fingerprint first: if a skill changes while it is being loaded, the snapshot looks stale next time and is
  // retaken, instead of pairing new content with an old fingerprint and never noticing.
  const fingerprint = await skillsFingerprint(dirs);
  const { skills, warnings } = await loadSkills(dirs);
  return { skills, warnings, fingerprint, takenAt: (opts.now ?? new Date()).getTime() };
}

export async function isSkillSnapshotStale(snapshot: SkillSnapshot, dirs: string[]): Promise<boolean> {
  return (await skillsFingerprint(dirs)) !== snapshot.fingerprint;
}

/**
 * The per-run entry point for the decision above: reuse `previous` unless the session was reset or the skill
 * dirs changed since it was taken.
 */
export async function resolveSkillSnapshot(input: {
  previous?: SkillSnapshot;
  dirs: string[];
  /** True right after `/new` or `/reset`. */
  reset?: boolean;
  now?: Date;
  /** the dirs' current fingerprint; default skillsFingerprint (a process passes its cached one, prompt/bootstrap-cache.ts) */
  fingerprint?: (dirs: string[]) => Promise<string>;
}): Promise<{ snapshot: SkillSnapshot; reused: boolean }> {
  const { previous, dirs } = input;
  const current = input.fingerprint ?? skillsFingerprint;
  if (previous && !input.reset && (await current(dirs)) === previous.fingerprint) {
    return { snapshot: previous, reused: true };
  }
  return { snapshot: await createSkillSnapshot(dirs, { now: input.now }), reused: false };
}

export interface FormatSkillsOptions {
  maxSkills?: number;
  maxChars?: number;
}

/** A single runaway description must not eat the budget that would list dozens of other skills. */
const MAX_DESCRIPTION_CHARS = 300;

function skillLine(skill: Skill): string {
  const description =
    skill.description.length > MAX_DESCRIPTION_CHARS
      ? `${skill.description.slice(0, MAX_DESCRIPTION_CHARS - 1)}…`
      : skill.description;
  return `- ${skill.name}: ${description} (${skill.location})`;
}

function moreNote(count: number): string {
  return `(${count} more skill${count === 1 ? "" : "s"} not listed)`;
}

/**
 * Compact list for the system prompt: one line per skill. The model reads the SKILL.md at `location` only when
 * a task matches, so instructions cost tokens only when used. Skills past the limits are counted, not dropped
 * silently, so the model knows to look in the skill folders if nothing listed fits.
 */
export function formatSkillsPrompt(skills: Skill[], opts: FormatSkillsOptions = {}): string {
  if (skills.length === 0) return "";
  const maxSkills = opts.maxSkills ?? DEFAULT_MAX_SKILLS_IN_PROMPT;
  const maxChars = opts.maxChars ?? DEFAULT_MAX_SKILLS_PROMPT_CHARS;
  const header = "When a task matches a skill, read its SKILL.md with the read tool first and follow it.";
  const lines = [header];
  let used = header.length;
  let listed = 0;
  for (const skill of skills) {
    if (listed >= maxSkills) break;
    const line = skillLine(skill);
    const left = skills.length - listed - 1;
    // Room for this line and, if skills remain after it, for the note that counts them.
    const noteRoom = left > 0 ? 1 + moreNote(left).length : 0;
    if (used + 1 + line.length + noteRoom > maxChars) break;
    lines.push(line);
    used += 1 + line.length;
    listed++;
  }
  const rest = skills.length - listed;
  if (rest > 0) lines.push(moreNote(rest));
  return lines.join("\n");
}

function envKey(name: string): string {
  const key = name
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return key === "" ? "SKILL" : key;
}

/**
 * Env for exec: `LOOPGATE_SKILLS_DIRS` (parent dirs, path-delimited), `LOOPGATE_SKILL_<NAME>_DIR` per skill so
 * a skill's scripts can find their own folder, and each skill's `env` map. When `baseEnv` is given, variables it
 * already sets are left out: the user's own environment wins over a skill's defaults.
 */
export function skillsEnv(skills: Skill[], baseEnv: Record<string, string | undefined> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (key: string, value: string) => {
    // First writer wins, matching skill precedence (earlier dirs shadow later ones).
    if (baseEnv[key] !== undefined || key in out) return;
    out[key] = value;
  };
  if (skills.length === 0) return out;
  const parents = [...new Set(skills.map((s) => path.dirname(s.dir)))];
  put("LOOPGATE_SKILLS_DIRS", parents.join(path.delimiter));
  for (const skill of skills) put(`LOOPGATE_SKILL_${envKey(skill.name)}_DIR`, skill.dir);
  for (const skill of skills) for (const [k, v] of Object.entries(skill.env)) put(k, v);
  return out;
}
