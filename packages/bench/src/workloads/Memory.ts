/**
 * Session memory: one agent runs N sequential turns; the heap it retains afterwards (after a forced collection,
 * against the heap before the agent existed) is divided by turns and by the entries its log or state holds. The
 * turns' cost is reported too, over the first and the last 10 %: a long session shows what W1's 2 000 turns do not
 * (a runtime that copies its whole history per turn pays for it once the copy is a large object, ≥ 16 K elements).
 */
import { finish, memoryAfterGc, prompts, sequentialTurns, tenths, warmUp } from "../Measure.js"
import { servedText } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { turnChecks } from "../Workload.js"

export const Memory: Workload = {
  id: "Mem",
  title: "long session memory",
  description: "one agent, N sequential turns; heap retained per turn and per log entry after forced GC",
  sizes: { full: 10_000, quick: 2000, smoke: 5 },
  metrics: [
    { id: "kbPerTurn", label: "KB retained per turn", unit: "KB", better: "lower", headline: true },
    { id: "bytesPerEntry", label: "bytes per log entry", unit: "B", better: "lower" },
    { id: "entriesPerTurn", label: "log entries per turn", unit: "count", better: "lower" },
    { id: "usFirst10", label: "µs/turn, first 10 %", unit: "µs", better: "lower" },
    { id: "usLast10", label: "µs/turn, last 10 %", unit: "µs", better: "lower" },
    { id: "growth", label: "growth (last ÷ first 10 %)", unit: "×", better: "lower" }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    const before = await memoryAfterGc()
    const agent = await runtime.createAgent(servedText)
    const texts = prompts("mem-", n)
    const durations = await sequentialTurns(agent, texts)
    const after = await memoryAfterGc()
    const transcript = await finish(agent)
    const retained = after.heap - before.heap
    const { first, growth, last } = tenths(durations)
    return {
      figures: {
        kbPerTurn: retained / n / 1024,
        bytesPerEntry: retained / transcript.entries,
        entriesPerTurn: transcript.entries / n,
        usFirst10: first,
        usLast10: last,
        growth
      },
      checks: turnChecks(transcript, texts)
    }
  }
}
