// Loaded with `node --import` by bench/metrics/cli-ab.mjs: writes the process's own CPU time (user+sys, ms) to
// $LOOPGATE_CLI_AB_CPU_OUT when it exits. No static import, and the built-in only at exit, so the process measured
// loads nothing it would not have loaded anyway.
process.on("exit", () => {
  const u = process.resourceUsage();
  const ms = (u.userCPUTime + u.systemCPUTime) / 1000;
  process.getBuiltinModule("node:fs").writeFileSync(process.env.LOOPGATE_CLI_AB_CPU_OUT, String(ms));
});
