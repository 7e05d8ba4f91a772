/**
 * W7 resume: what a user waits for when resuming a long session. A SQLite session of N events (whole 14-event
 * turns) is written and opened once (which replays it and saves the snapshot), untimed; then a fresh store opens it
 * (from the snapshot), an agent is built on the log, and a follow-up is sent: timed are the open, and the wait from
 * the send to the model's first request, which carries the whole history. Checks: the open started from the
 * snapshot, the first request holds every earlier prompt and the new one last, and the resumed turn completed.
 * Only Harness has a durable store here. The original design's loop is quoted at ≈ 263 ms for 1.3M events.
 *
 * The session is prepared in the measuring process, so the code that decodes it was compiled by the first open:
 * a resume in a new process pays that compilation too.
 */
import * as path from "node:path"
import type { Workload } from "../Workload.js"
import { check, checkEqual, durableRuntimes, withDurableStore } from "../Workload.js"

export const W7: Workload = {
  id: "W7",
  title: "resuming a long session",
  description: "a SQLite session of N events opened from its snapshot; the resumed agent's first request",
  sizes: { full: 1_000_000, quick: 100_000, smoke: 2_000 },
  runsOn: durableRuntimes,
  metrics: [
    {
      id: "openMs",
      label: "open from the snapshot and build the agent, ms",
      unit: "ms",
      better: "lower",
      headline: true
    },
    {
      id: "firstRequestMs",
      label: "send → the model's first request, ms",
      unit: "ms",
      better: "lower",
      headline: true
    },
    { id: "totalMs", label: "open → the first request, ms", unit: "ms", better: "lower", headline: true },
    { id: "openCpuMs", label: "open and build, CPU ms", unit: "ms", better: "lower" },
    { id: "firstRequestCpuMs", label: "send → first request, CPU ms", unit: "ms", better: "lower" }
  ],
  run: (runtime, n) =>
    withDurableStore(runtime, "W7", async (store, dir) => {
      const file = path.join(dir, "w7.db")
      const { turns } = await store.prepareLong(file, n)
      const text = "and now, after all that?"
      const resumed = await store.resume(file, text)
      return {
        figures: {
          openMs: resumed.openUs / 1000,
          firstRequestMs: resumed.firstRequestUs / 1000,
          totalMs: resumed.totalUs / 1000,
          openCpuMs: resumed.openCpuUs / 1000,
          firstRequestCpuMs: resumed.firstRequestCpuUs / 1000
        },
        checks: [
          check("opened from the snapshot", resumed.fromSnapshot, resumed.fromSnapshot ? "yes" : "replayed"),
          checkEqual("prompts in the first request", resumed.requestUserTexts, turns + 1),
          check("the new prompt last", resumed.lastUserText === text, JSON.stringify(resumed.lastUserText)),
          check("the resumed turn completed", resumed.completed, resumed.completed ? "yes" : "no")
        ]
      }
    })
}
