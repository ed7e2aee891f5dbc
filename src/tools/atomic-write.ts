import { randomBytes } from "node:crypto";
import { open, rename, rm, stat } from "node:fs/promises";
import path from "node:path";

/**
 * Writes `content` to `file` through a temp file in the same directory and a rename, so readers (and a crash)
 * see the old content or the new, never a half-written file. An existing file keeps its permission bits.
 */
export async function writeFileAtomic(file: string, content: string): Promise<number> {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const mode = await stat(file).then(
    (info) => info.mode & 0o7777,
    () => undefined,
  );
  const data = Buffer.from(content, "utf8");
  try {
    const handle = await open(temp, "wx", mode ?? 0o666);
    try {
      await handle.writeFile(data);
      // The umask applies at creation; an existing file's mode is restored exactly.
      if (mode !== undefined) await handle.chmod(mode);
      // Flushed before the rename, or a power loss could leave the new name pointing at an empty file.
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  return data.length;
}
