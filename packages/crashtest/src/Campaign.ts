/**
 * A crash campaign: for each seed, a census run (no kill) counts where the scenario can be killed, then kill
 * points chosen from the seed are each run in a fresh store, the child killed there with `SIGKILL`, and the store
 * checked by `Verify`. Killed sessions whose log reopened are then resumed by a second child (itself killed at a
 * send), so kills also land in resumed sessions.
 *
 * @since 0.0.0
 */
import type { CommandExecutor } from "@effect/platform"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Parent from "./Parent.js"
import type { Backend, ChildConfig } from "./Protocol.js"
import * as Scenario from "./Scenario.js"
import * as Stores from "./Stores.js"
import * as Verify from "./Verify.js"

/**
 * One run and its verdict.
 *
 * @since 0.0.0
 * @category models
 */
export interface Outcome {
  readonly run: Parent.RunResult
  readonly verdict: Verify.Verdict
  /** `census`, `kill` (a fresh session killed), or `resume-kill` (a resumed session, killed or run to its end). */
  readonly phase: "census" | "kill" | "resume"
}

/**
 * Options of {@link run}.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options {
  readonly runner: Parent.Runner
  readonly backend: Backend
  /** Seeds are `firstSeed`, `firstSeed + 1`, … until `kills` kill points were run. */
  readonly firstSeed: number
  /** How many kill points to reach (fresh sessions killed there; resumed runs come on top). */
  readonly kills: number
  /** Kill points per seed. */
  readonly perSeed: number
  /** Child processes at once. */
  readonly concurrency: number
  /** Also resume every `resumeEvery`-th killed session in a second child (0: never). */
  readonly resumeEvery: number
}

const freshDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-crash-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const configOf = (
  backend: Backend,
  dir: string,
  seed: number,
  rest: Pick<ChildConfig, "round" | "mode"> & { readonly kill?: Scenario.KillPoint | undefined }
): ChildConfig => ({
  backend,
  location: Stores.locationIn(backend, dir),
  sessionId: `crash-${seed}`,
  seed,
  round: rest.round,
  mode: rest.mode,
  ...(rest.kill === undefined ? {} : { kill: rest.kill })
})

/**
 * Runs one kill point in a fresh directory: kill, verify, and (when asked and the log reopened) resume and verify
 * again.
 */
const killOne = (
  options: Options,
  seed: number,
  kill: Scenario.KillPoint,
  resume: boolean
): Effect.Effect<ReadonlyArray<Outcome>, never, CommandExecutor.CommandExecutor> =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* freshDirectory
    const first = yield* Parent.run(
      options.runner,
      configOf(options.backend, dir, seed, { round: 0, mode: "create", kill })
    )
    const verdict = yield* Verify.verify(first)
    const outcomes: Array<Outcome> = [{ run: first, verdict, phase: "kill" }]
    if (resume && verdict.exists && verdict.reopened) {
      const random = Scenario.prng(seed * 31 + kill.n)
      const second = yield* Parent.run(
        options.runner,
        configOf(options.backend, dir, seed, { round: 1, mode: "resume", kill: { kind: "sent", n: random.int(1, 4) } })
      )
      outcomes.push({ run: second, verdict: yield* Verify.verify(second, [first]), phase: "resume" })
    }
    return outcomes
  }))

/**
 * Runs a campaign and returns every outcome (census runs included).
 *
 * Contract: deterministic in its choices (seeds, kill points); the children's timing is real, so what a kill
 * interrupts within a kill kind's n-th occurrence is whatever the process was doing at that instant.
 *
 * @since 0.0.0
 * @category running
 */
export const run = (options: Options): Effect.Effect<ReadonlyArray<Outcome>, never, CommandExecutor.CommandExecutor> =>
  Effect.gen(function*() {
    const outcomes: Array<Outcome> = []
    let seed = options.firstSeed
    // Kill points reached: a point drawn from the census may not recur in the killed run (a cancel or a stream
    // timed a little differently); such a run is still verified, and another seed makes up for it.
    let reached = 0
    let started = 0
    // Bounded: a child that keeps failing its census would otherwise loop for ever (the test then counts short).
    while (reached < options.kills && seed - options.firstSeed <= options.kills) {
      const census = yield* Effect.scoped(Effect.gen(function*() {
        const dir = yield* freshDirectory
        const run = yield* Parent.run(
          options.runner,
          configOf(options.backend, dir, seed, { round: 0, mode: "create" })
        )
        return { run, verdict: yield* Verify.verify(run), phase: "census" as const }
      }))
      outcomes.push(census)
      const done = census.run.lines.find((line) => line._tag === "done")
      if (done === undefined || done._tag !== "done") {
        seed++
        continue
      }
      const points = Scenario.killPoints(seed, done.census, Math.min(options.perSeed, options.kills - reached))
      const currentSeed = seed
      const first = started
      const results = yield* Effect.forEach(
        points,
        (point, i) =>
          killOne(options, currentSeed, point, options.resumeEvery > 0 && (first + i) % options.resumeEvery === 0),
        { concurrency: options.concurrency }
      )
      started += points.length
      for (const result of results) {
        for (const outcome of result) {
          outcomes.push(outcome)
          if (outcome.phase === "kill" && outcome.run.killedAt !== undefined) reached++
        }
      }
      seed++
    }
    return outcomes
  })

/**
 * A one-line-per-kind summary of a campaign (for the test output and the report).
 *
 * @since 0.0.0
 * @category reporting
 */
export const summarise = (outcomes: ReadonlyArray<Outcome>): string => {
  const rows = new Map<string, { runs: number; killed: number; open: number; repaired: number; lost: number }>()
  for (const { phase, run, verdict } of outcomes) {
    const key = phase === "census" ? "census" : `${phase}:${run.killedAt?.kind ?? "(ran to the end)"}`
    const row = rows.get(key) ?? { runs: 0, killed: 0, open: 0, repaired: 0, lost: 0 }
    row.runs++
    if (run.exit === "SIGKILL") row.killed++
    if (verdict.openTurn) row.open++
    if (verdict.closers > 0) row.repaired++
    row.lost += verdict.lost.length
    rows.set(key, row)
  }
  const reached = outcomes.filter((o) => o.phase !== "census" && o.run.killedAt !== undefined).length
  const fromSnapshot = outcomes.filter((o) => o.verdict.snapshot).length
  const header =
    `${outcomes.length} child processes, ${reached} killed at their kill point (SIGKILL), ${fromSnapshot} ` +
    "reopened from a snapshot"
  const lines = [...rows.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, r]) =>
      `${
        key.padEnd(28)
      } runs ${r.runs}, SIGKILLed ${r.killed}, open turn ${r.open}, repaired ${r.repaired}, lost ${r.lost}`
    )
  return [header, ...lines].join("\n")
}
