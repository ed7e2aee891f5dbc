import fs from "node:fs";
import path from "node:path";

/**
 * Where a fleet's workspaces live (docs/scale-out.md "What is shared"): a session's files are wherever its run
 * executes, so several nodes need either one volume every node mounts at the same path (`cluster.workspace:
 * "shared"`) or a load balancer that keeps each session on one node (`"affinity"`). Without either, a session that
 * moves to another node finds another workspace. A node cannot see the others' disks, so it judges by the file system
 * its own workspace is on: a network file system counts as shared; anything else is this machine's disk.
 */

/** File systems that other machines can mount too (Linux `/proc/self/mountinfo` type names). */
const NETWORK_FS =
  /^(nfs4?|cifs|smb3|smbfs|ceph|glusterfs|lustre|gpfs|beegfs|9p|virtiofs|fuse\.(sshfs|s3fs|gcsfuse|juicefs|rclone|glusterfs|cephfs|goofys))$/;

/** The file system type of the mount `dir` is on, from mountinfo text; undefined when it cannot be told. */
export function fileSystemOf(dir: string, mountinfo: string): string | undefined {
  let best: { point: string; type: string } | undefined;
  for (const line of mountinfo.split("\n")) {
    // "<id> <parent> <maj:min> <root> <mount point> <options> [optional…] - <type> <source> <super options>"
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const point = unescapeMount(left.split(" ")[4] ?? "");
    const type = right.split(" ")[0];
    if (!point || !type) continue;
    const inside = dir === point || dir.startsWith(point.endsWith("/") ? point : `${point}/`);
    if (inside && (!best || point.length >= best.point.length)) best = { point, type };
  }
  return best?.type;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/**
 * The start-up warning of a Postgres gateway node whose workspace is on a local disk while `cluster.workspace` says
 * nothing; undefined when the layout is declared or the workspace is on a network file system.
 */
export function workspaceLayoutWarning(
  declared: "shared" | "affinity" | undefined,
  workspaceDir: string,
  readMountinfo: () => string | undefined = readOwnMountinfo,
): string | undefined {
  if (declared !== undefined) return undefined;
  const dir = path.resolve(workspaceDir);
  const info = readMountinfo();
  const type = info === undefined ? undefined : fileSystemOf(dir, info);
  if (type !== undefined && NETWORK_FS.test(type)) return undefined;
  return `the workspace ${dir} is on this machine's disk${type ? ` (${type})` : ""}, and cluster.workspace is not set: a session whose next run goes to another node finds another workspace there. Mount one shared volume at that path on every node and set cluster.workspace: "shared", or keep each session on one node at the load balancer and set cluster.workspace: "affinity" (docs/scale-out.md)`;
}

function readOwnMountinfo(): string | undefined {
  try {
    return fs.readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    // not Linux: nothing tells the file system apart, so the workspace counts as local
    return undefined;
  }
}
