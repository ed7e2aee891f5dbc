import { DockerBackend } from "./docker.js";
import { sandboxConformance } from "./sandbox.conformance.js";

// a real Docker daemon; where none answers (this repo's CI machine has none) the suite skips with that one line
sandboxConformance("docker", async () => {
  const backend = new DockerBackend({ env: process.env });
  try {
    await backend.check();
    return backend;
  } catch (err) {
    return `no Docker here: ${(err as Error).message.split(":")[0]}`;
  }
});
