/**
 * The loopback model server alone, for probes run by hand (`cpuProbe --served`, callgrind): `tsx src/serveBin.ts`
 * prints `BENCH_SSE_URL=<url>` and serves until it is stopped, so the probe's CPU and instruction counts are the
 * runtime's alone.
 */
import { startSseServer } from "./SseServer.js"

startSseServer().then(
  (server) => console.log(`BENCH_SSE_URL=${server.url}`),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
