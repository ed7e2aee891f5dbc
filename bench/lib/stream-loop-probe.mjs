// How late the event loop runs a 5 ms timer, sampled while the streaming bench measures (gateway-host.mjs and
// stream-relay.mjs answer "loop-start" / "loop-stop" with it). A stall delays every stream of the process at once,
// so its percentiles tell a lag the process caused from one the machine caused (a starved process shows both).
// A timer of our own rather than perf_hooks.monitorEventLoopDelay: in the gateway host that histogram took a
// single sample per window (seen on Node 24.22.3), here every turn of the timer is a sample.
const INTERVAL_MS = 5;

export function startLoopProbe() {
  const late = [];
  let expected = performance.now() + INTERVAL_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    late.push(Math.max(0, now - expected));
    expected = now + INTERVAL_MS;
  }, INTERVAL_MS);
  return function stop() {
    clearInterval(timer);
    late.sort((a, b) => a - b);
    const at = (p) => (late.length ? late[Math.min(late.length - 1, Math.ceil((p / 100) * late.length) - 1)] : null);
    const r = (ms) => (ms === null ? null : Math.round(ms * 100) / 100);
    return {
      p50: r(at(50)),
      p90: r(at(90)),
      p99: r(at(99)),
      max: r(late.at(-1) ?? null),
      samples: late.length,
    };
  };
}
