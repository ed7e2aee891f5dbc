import { describe, expect, it } from "vitest";
import { fileSystemOf, workspaceLayoutWarning } from "./workspace-layout.js";

// the shape of /proc/self/mountinfo: the mount point is the 5th field, the type the first after " - "
const MOUNTS = [
  "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
  "40 22 0:35 / /srv/fleet rw,relatime shared:20 - nfs4 fs.internal:/fleet rw,vers=4.2",
  "41 22 0:36 / /srv/fleet\\040local rw - tmpfs tmpfs rw",
].join("\n");

describe("a Postgres node's workspace layout (cluster.workspace)", () => {
  it("cluster.workspace unset and the workspace on a local disk: the start-up warning names the path and both layouts", () => {
    const warning = workspaceLayoutWarning(undefined, "/home/op/.loopgate/workspace", () => MOUNTS);
    expect(warning).toContain("/home/op/.loopgate/workspace is on this machine's disk (ext4)");
    expect(warning).toContain('cluster.workspace: "shared"');
    expect(warning).toContain('cluster.workspace: "affinity"');
  });

  it("no warning once cluster.workspace declares a layout, or when the workspace is on a network file system", () => {
    expect(workspaceLayoutWarning("shared", "/home/op/ws", () => MOUNTS)).toBeUndefined();
    expect(workspaceLayoutWarning("affinity", "/home/op/ws", () => MOUNTS)).toBeUndefined();
    expect(workspaceLayoutWarning(undefined, "/srv/fleet/workspace", () => MOUNTS)).toBeUndefined();
  });

  it("the longest mount point holding the path decides (escaped spaces read as spaces); unknown counts as local", () => {
    expect(fileSystemOf("/srv/fleet local/ws", MOUNTS)).toBe("tmpfs");
    expect(fileSystemOf("/srv/fleetwood", MOUNTS)).toBe("ext4");
    expect(workspaceLayoutWarning(undefined, "/ws", () => undefined)).toContain("/ws is on this machine's disk,");
  });
});
