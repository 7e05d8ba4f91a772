/**
 * W6 writes: the agent's write path on SQLite against raw better-sqlite3, per turn. The same turns (14 events: a
 * prompt, a tool step, a text step) are written four ways, each into a new file: through a `SessionLog` as the
 * agent commits them (a transaction per section, the durability barrier at `turn/end`), through the store alone
 * (one synced commit per turn), and through raw better-sqlite3 (the store's rows, one transaction per turn, WAL,
 * `synchronous` NORMAL and FULL). Each file is read back by a fresh connection: every event there, and the log's
 * rules hold. Only Harness has a durable store here.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { Writer, WriteRun } from "../Runtime.js"
import { storeTurnEvents } from "../Runtime.js"
import type { Check, Workload } from "../Workload.js"
import { check, checkEqual, durableRuntimes, withDurableStore } from "../Workload.js"

const writers: ReadonlyArray<Writer> = ["log", "store", "raw-normal", "raw-full"]

export const W6: Workload = {
  id: "W6",
  title: "durable writes (SQLite)",
  description: "N turns of 14 events written through the agent's log, the store alone and raw better-sqlite3",
  sizes: { full: 1000, quick: 300, smoke: 20 },
  runsOn: durableRuntimes,
  metrics: [
    { id: "logUs", label: "agent's write path, µs/turn", unit: "µs", better: "lower", headline: true },
    { id: "storeUs", label: "store alone, µs/turn", unit: "µs", better: "lower", headline: true },
    { id: "rawNormalUs", label: "raw better-sqlite3 NORMAL, µs/turn", unit: "µs", better: "lower", headline: true },
    { id: "rawFullUs", label: "raw better-sqlite3 FULL, µs/turn", unit: "µs", better: "lower" },
    { id: "logPerRaw", label: "agent's write path ÷ raw NORMAL", unit: "×", better: "lower", headline: true },
    { id: "storePerRaw", label: "store alone ÷ raw NORMAL", unit: "×", better: "lower" },
    { id: "logCpuUs", label: "agent's write path, CPU µs/turn", unit: "µs", better: "lower" },
    { id: "storeCpuUs", label: "store alone, CPU µs/turn", unit: "µs", better: "lower" },
    { id: "rawNormalCpuUs", label: "raw better-sqlite3 NORMAL, CPU µs/turn", unit: "µs", better: "lower" }
  ],
  run: (runtime, n, size) =>
    withDurableStore(runtime, "W6", async (store, dir) => {
      // Every writer once untimed, so what is timed is compiled code, not the JIT compiling each path.
      if (size !== "smoke") {
        for (const writer of writers) await store.write(writer, fs.mkdtempSync(path.join(dir, "warm-")), 100)
      }
      const runs = new Map<Writer, WriteRun>()
      for (const writer of writers) runs.set(writer, await store.write(writer, dir, n))
      const of = (writer: Writer) => runs.get(writer)!
      const checks: Array<Check> = writers.map((writer) =>
        checkEqual(`${writer}: events in the file`, of(writer).stored, n * storeTurnEvents)
      )
      // Harness's own files are read back as a resumed session would be: the log's rules hold, no seq is missing.
      for (const writer of ["log", "store"] as const) {
        const problems = of(writer).problems
        checks.push(check(`${writer}: the log reads back clean`, problems.length === 0, problems.join("; ") || "clean"))
      }
      return {
        figures: {
          logUs: of("log").usPerTurn,
          storeUs: of("store").usPerTurn,
          rawNormalUs: of("raw-normal").usPerTurn,
          rawFullUs: of("raw-full").usPerTurn,
          logPerRaw: of("log").usPerTurn / of("raw-normal").usPerTurn,
          storePerRaw: of("store").usPerTurn / of("raw-normal").usPerTurn,
          logCpuUs: of("log").cpuUsPerTurn,
          storeCpuUs: of("store").cpuUsPerTurn,
          rawNormalCpuUs: of("raw-normal").cpuUsPerTurn
        },
        checks
      }
    })
}
