import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createSkillSnapshot,
  eligibleSkills,
  formatSkillsPrompt,
  isSkillSnapshotStale,
  loadSkills,
  missingSkillEnv,
  resolveSkillSnapshot,
  type Skill,
  skillsEnv,
} from "./skills.js";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "loopgate-skills-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function writeSkill(dir: string, folder: string, text: string): Promise<string> {
  await mkdir(path.join(dir, folder), { recursive: true });
  const file = path.join(dir, folder, "SKILL.md");
  await writeFile(file, text);
  return file;
}

const skillMd = (name: string, description: string, extra = "") =>
  `---\nname: ${name}\ndescription: ${description}\n${extra}---\n\n# ${name}\nInstructions.\n`;

describe("loadSkills", () => {
  it("reads name, description, location and env from SKILL.md front matter", async () => {
    const dir = path.join(root, "skills");
    const file = await writeSkill(
      dir,
      "weather",
      skillMd("weather", "Current weather and forecasts for a city.", "env:\n  - WEATHER_API_KEY\n"),
    );
    await writeSkill(dir, "deploy", skillMd("deploy", "Deploy the site.", "env:\n  PORT: 8080\n  DEBUG: true\n"));
    const { skills, warnings } = await loadSkills([dir]);
    expect(warnings).toEqual([]);
    expect(skills).toEqual([
      {
        name: "deploy",
        description: "Deploy the site.",
        location: path.join(dir, "deploy", "SKILL.md"),
        dir: path.join(dir, "deploy"),
        requiredEnv: [],
        env: { PORT: "8080", DEBUG: "true" },
      },
      {
        name: "weather",
        description: "Current weather and forecasts for a city.",
        location: file,
        dir: path.join(dir, "weather"),
        requiredEnv: ["WEATHER_API_KEY"],
        env: {},
      },
    ]);
  });

  it("accepts CRLF line ends and a BOM, and folds a multi-line description into one line", async () => {
    const dir = path.join(root, "skills");
    await writeSkill(
      dir,
      "win",
      "\uFEFF---\r\nname: win\r\ndescription: >\r\n  first line\r\n  second line\r\n---\r\nbody",
    );
    const { skills, warnings } = await loadSkills([dir]);
    expect(warnings).toEqual([]);
    expect(skills[0]).toMatchObject({ name: "win", description: "first line second line" });
  });

  it("skips a skill with bad front matter and warns with the file's path, while loading the others", async () => {
    const dir = path.join(root, "skills");
    const badYaml = await writeSkill(dir, "bad-yaml", "---\nname: [unclosed\ndescription: x\n---\n");
    const noFm = await writeSkill(dir, "no-fm", "# Just markdown\n");
    const noDesc = await writeSkill(dir, "no-desc", "---\nname: lonely\n---\n");
    const badEnv = await writeSkill(dir, "bad-env", skillMd("bad-env", "x", "env:\n  - 'not a name'\n"));
    await writeSkill(dir, "good", skillMd("good", "Works."));
    const { skills, warnings } = await loadSkills([dir]);
    expect(skills.map((s) => s.name)).toEqual(["good"]);
    expect(warnings).toHaveLength(4);
    for (const file of [badYaml, noFm, noDesc, badEnv]) {
      expect(warnings.some((w) => w.startsWith(file))).toBe(true);
    }
    expect(warnings.find((w) => w.startsWith(noDesc))).toMatch(/missing description/);
    expect(warnings.find((w) => w.startsWith(badEnv))).toMatch(/not a name/);
  });

  it("ignores missing dirs and folders without SKILL.md", async () => {
    const dir = path.join(root, "skills");
    await mkdir(path.join(dir, "just-a-folder"), { recursive: true });
    await writeFile(path.join(dir, "README.md"), "not a skill");
    const { skills, warnings } = await loadSkills([path.join(root, "nope"), dir]);
    expect(skills).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it("lets the first dir win on a name clash, so a workspace skill overrides a shared one", async () => {
    const workspace = path.join(root, "ws-skills");
    const shared = path.join(root, "shared-skills");
    await writeSkill(workspace, "notes", skillMd("notes", "Workspace version."));
    await writeSkill(shared, "notes", skillMd("notes", "Shared version."));
    await writeSkill(shared, "other", skillMd("other", "Only shared."));
    const { skills, warnings } = await loadSkills([workspace, shared]);
    expect(skills.map((s) => [s.name, s.description])).toEqual([
      ["notes", "Workspace version."],
      ["other", "Only shared."],
    ]);
    expect(warnings).toEqual([]);
  });

  it("warns about two folders in the same dir declaring the same name", async () => {
    const dir = path.join(root, "skills");
    await writeSkill(dir, "a", skillMd("dup", "First."));
    const second = await writeSkill(dir, "b", skillMd("dup", "Second."));
    const { skills, warnings } = await loadSkills([dir, dir]);
    expect(skills.map((s) => s.description)).toEqual(["First."]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(second);
  });
});

describe("skill env requirements", () => {
  const skill = (requiredEnv: string[], env: Record<string, string> = {}): Skill => ({
    name: "s",
    description: "d",
    location: "/x/SKILL.md",
    dir: "/x",
    requiredEnv,
    env,
  });

  it("reports required env vars that are not set", () => {
    expect(missingSkillEnv(skill(["A", "B"]), { A: "1" })).toEqual(["B"]);
    expect(missingSkillEnv(skill(["A"]), { A: "" })).toEqual(["A"]);
    expect(missingSkillEnv(skill(["A"], { A: "from-skill" }), {})).toEqual([]);
  });

  it("holds back skills whose required env is missing", () => {
    const ok = { ...skill(["A"]), name: "ok" };
    const blocked = { ...skill(["TOKEN"]), name: "blocked" };
    const result = eligibleSkills([ok, blocked], { A: "1" });
    expect(result.eligible.map((s) => s.name)).toEqual(["ok"]);
    expect(result.ineligible).toEqual([{ skill: blocked, missingEnv: ["TOKEN"] }]);
  });

  it("injects each skill's folder and env map, without overriding the user's own env", () => {
    const a: Skill = { ...skill([], { API_URL: "https://a", SHARED: "a" }), name: "pdf-tools", dir: "/s/pdf-tools" };
    const b: Skill = { ...skill([], { SHARED: "b", USER_SET: "skill" }), name: "b", dir: "/t/b" };
    expect(skillsEnv([a, b], { USER_SET: "user" })).toEqual({
      LOOPGATE_SKILLS_DIRS: ["/s", "/t"].join(path.delimiter),
      LOOPGATE_SKILL_PDF_TOOLS_DIR: "/s/pdf-tools",
      LOOPGATE_SKILL_B_DIR: "/t/b",
      API_URL: "https://a",
      SHARED: "a",
    });
    expect(skillsEnv([])).toEqual({});
  });
});

describe("skill snapshots", () => {
  const now = new Date("2026-07-12T15:00:00Z");

  it("reuses the snapshot while nothing changed", async () => {
    const dir = path.join(root, "skills");
    await writeSkill(dir, "one", skillMd("one", "First."));
    const first = await createSkillSnapshot([dir], { now });
    expect(first.takenAt).toBe(now.getTime());
    expect(await isSkillSnapshotStale(first, [dir])).toBe(false);
    const next = await resolveSkillSnapshot({ previous: first, dirs: [dir] });
    expect(next.reused).toBe(true);
    expect(next.snapshot).toBe(first);
  });

  it("retakes the snapshot after a skill is added, so the model sees it", async () => {
    const dir = path.join(root, "skills");
    await writeSkill(dir, "one", skillMd("one", "First."));
    const first = await createSkillSnapshot([dir], { now });
    await writeSkill(dir, "two", skillMd("two", "Second."));
    expect(await isSkillSnapshotStale(first, [dir])).toBe(true);
    const next = await resolveSkillSnapshot({ previous: first, dirs: [dir], now });
    expect(next.reused).toBe(false);
    expect(next.snapshot.skills.map((s) => s.name)).toEqual(["one", "two"]);
  });

  it("retakes the snapshot after SKILL.md is edited, even with the same size", async () => {
    const dir = path.join(root, "skills");
    const file = await writeSkill(dir, "one", skillMd("one", "Old text."));
    const first = await createSkillSnapshot([dir], { now });
    await writeFile(file, skillMd("one", "New text."));
    // Same size; make sure the mtime moved even on coarse-timestamp file systems.
    await utimes(file, new Date("2030-01-01"), new Date("2030-01-01"));
    expect(await isSkillSnapshotStale(first, [dir])).toBe(true);
    const next = await resolveSkillSnapshot({ previous: first, dirs: [dir], now });
    expect(next.snapshot.skills[0].description).toBe("New text.");
  });

  it("retakes the snapshot after a skill folder is removed, so the prompt never names a deleted skill", async () => {
    const dir = path.join(root, "skills");
    await writeSkill(dir, "one", skillMd("one", "First."));
    await writeSkill(dir, "gone", skillMd("gone", "Soon deleted."));
    const first = await createSkillSnapshot([dir], { now });
    await rm(path.join(dir, "gone"), { recursive: true });
    const next = await resolveSkillSnapshot({ previous: first, dirs: [dir], now });
    expect(next.snapshot.skills.map((s) => s.name)).toEqual(["one"]);
  });

  it("retakes the snapshot after /new or /reset even when nothing changed", async () => {
    const dir = path.join(root, "skills");
    await writeSkill(dir, "one", skillMd("one", "First."));
    const first = await createSkillSnapshot([dir], { now });
    const later = new Date("2026-07-13T00:00:00Z");
    const next = await resolveSkillSnapshot({ previous: first, dirs: [dir], reset: true, now: later });
    expect(next.reused).toBe(false);
    expect(next.snapshot.takenAt).toBe(later.getTime());
  });

  it("notices when a skills dir appears that was missing before", async () => {
    const dir = path.join(root, "later");
    const first = await createSkillSnapshot([dir], { now });
    expect(first.skills).toEqual([]);
    await writeSkill(dir, "one", skillMd("one", "First."));
    expect(await isSkillSnapshotStale(first, [dir])).toBe(true);
  });
});

describe("formatSkillsPrompt", () => {
  const many = (n: number, description = "Does a thing.") =>
    Array.from(
      { length: n },
      (_, i): Skill => ({
        name: `skill-${String(i).padStart(3, "0")}`,
        description,
        location: `/skills/skill-${i}/SKILL.md`,
        dir: `/skills/skill-${i}`,
        requiredEnv: [],
        env: {},
      }),
    );

  it("lists name, description and location, one line per skill", () => {
    expect(formatSkillsPrompt(many(2))).toMatchInlineSnapshot(`
      "When a task matches a skill, read its SKILL.md with the read tool first and follow it.
      - skill-000: Does a thing. (/skills/skill-0/SKILL.md)
      - skill-001: Does a thing. (/skills/skill-1/SKILL.md)"
    `);
  });

  it("is empty when there are no skills", () => {
    expect(formatSkillsPrompt([])).toBe("");
  });

  it("lists at most 150 skills and counts the rest in one line", () => {
    const text = formatSkillsPrompt(many(200));
    const lines = text.split("\n");
    expect(lines.filter((l) => l.startsWith("- "))).toHaveLength(150);
    expect(lines.at(-1)).toBe("(50 more skills not listed)");
  });

  it("stays within 18000 chars, counting what did not fit", () => {
    const text = formatSkillsPrompt(many(120, "x".repeat(250)));
    expect(text.length).toBeLessThanOrEqual(18_000);
    const listed = text.split("\n").filter((l) => l.startsWith("- ")).length;
    expect(listed).toBeGreaterThan(50);
    expect(listed).toBeLessThan(120);
    expect(text.endsWith(`(${120 - listed} more skills not listed)`)).toBe(true);
  });

  it("honours smaller custom limits", () => {
    expect(formatSkillsPrompt(many(3), { maxSkills: 2 }).split("\n").at(-1)).toBe("(1 more skill not listed)");
    expect(formatSkillsPrompt(many(10), { maxChars: 300 }).length).toBeLessThanOrEqual(300);
  });
});
