/**
 * The long-session campaign's parent (R223, ADR 0060): runs the {@link LongSession} child on one
 * store, `SIGKILL`s it at points drawn from a seed (in flight model requests, compaction summary requests in flight,
 * store appends), reopens and checks the store after every kill, lets the next child resume, and at the end checks
 * the whole session: every note accepted exactly once, every request within the window, several automatic
 * compactions, the goals as the child left them.
 *
 * @since 0.0.0
 */
import type { CommandExecutor } from "@effect/platform"
import type { SessionEvent } from "@harness/domain"
import { GoalReplay } from "@harness/goal"
import { History, LogCheck, SessionLog } from "@harness/session"
import { Effect, Either, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as LongSession from "./LongSession.js"
import * as Parent from "./Parent.js"
import * as Stores from "./Stores.js"

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const bin = path.join(packageDir, "src", "longSessionBin.ts")

/**
 * The Node arguments that start the child, before its configuration: through `tsx` when `HARNESS_CRASH_RUNNER` is
 * `tsx`, else one ES module bundled by esbuild from the same sources (a child starts in a fraction of the CPU),
 * deleted with the scope.
 *
 * @since 0.0.0
 * @category runners
 */
export const runner: Effect.Effect<ReadonlyArray<string>, never, Scope.Scope> =
  process.env.HARNESS_CRASH_RUNNER === "tsx"
    ? Effect.succeed(["--conditions=@harness/source", "--import", "tsx", bin])
    : Effect.map(Parent.bundleOf(bin), (bundled) => bundled.args)

/**
 * What one child run gave.
 *
 * @since 0.0.0
 * @category models
 */
interface ChildRun {
  /** The ids the child's sends returned. */
  readonly sent: ReadonlyArray<string>
  /** `KILL <kind> <n>` when it stopped at its kill point (and was killed), else undefined. */
  readonly killed: string | undefined
  readonly done: boolean
  readonly exit: string
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs one child to its end, or to its kill point and then `SIGKILL`.
 *
 * @since 0.0.0
 * @category running
 */
const runChild = (
  args: ReadonlyArray<string>,
  config: LongSession.Config
): Effect.Effect<ChildRun, never, CommandExecutor.CommandExecutor> =>
  Effect.suspend(() => {
    const sent: Array<string> = []
    let killed: string | undefined
    let done = false
    let stdout = ""
    return Effect.map(
      Parent.runProcess(args, config, (line, child) => {
        stdout += `${line}\n`
        if (line.startsWith("SENT ")) sent.push(line.slice(5))
        if (line === "DONE") done = true
        if (!line.startsWith("KILL ")) return Effect.void
        killed = line
        return Effect.ignore(child.kill("SIGKILL"))
      }),
      ({ exit, stderr }) => ({ sent, killed, done, exit, stdout, stderr })
    )
  })

/**
 * The kill points of a campaign, drawn from `seed`: kinds in turn (a summary request in flight first, then a store
 * append, then an ordinary request), each at an occurrence early enough in its run that a run of about
 * `turns / kills` notes reaches it.
 *
 * @since 0.0.0
 * @category constructors
 */
const plan = (
  seed: number,
  turns: number,
  kills: number
): ReadonlyArray<{ readonly kind: LongSession.KillKind; readonly n: number }> => {
  let state = seed >>> 0
  const next = (below: number) => {
    // mulberry32: a small seeded generator, so a seed names its kill points.
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return 1 + (((t ^ (t >>> 14)) >>> 0) % Math.max(1, below))
  }
  const segment = Math.max(1, Math.floor(turns / kills))
  const kinds: ReadonlyArray<LongSession.KillKind> = ["summary", "append", "request"]
  return Array.from({ length: kills }, (_, k) => {
    const kind = kinds[k % kinds.length]!
    const n = kind === "summary" ? next(2) : kind === "append" ? next(4 * segment) : next(segment)
    return { kind, n }
  })
}

/** The session's events, opened for writing (a crashed tail is repaired first, R106), then closed. */
const reopen = (config: LongSession.Config) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* SessionLog.open(LongSession.sessionId)
    const events = yield* log.events
    yield* log.close
    return events
  })).pipe(Effect.provide(Stores.layer(config.backend, Stores.locationIn(config.backend, config.directory))))

/**
 * What a campaign found: `problems` is empty when every check held.
 *
 * @since 0.0.0
 * @category models
 */
export interface Report {
  readonly problems: ReadonlyArray<string>
  readonly runs: number
  readonly kills: ReadonlyArray<string>
  readonly turns: number
  readonly events: number
  readonly requests: number
  readonly largestRequest: number
  readonly summaries: number
  readonly compactions: { readonly automatic: number; readonly manual: number }
}

const messageIds = (events: ReadonlyArray<SessionEvent.SessionEvent>): Array<string> =>
  events.flatMap((e) =>
    (e.type === "user/message" || e.type === "steering/message") && e.data.messageId !== undefined
      ? [e.data.messageId]
      : []
  )

const readSizes = (directory: string): Array<LongSession.RequestSize> => {
  const file = LongSession.requestsFile(directory)
  return fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))
    : []
}

/**
 * The checks after a kill: the repaired log is well-formed and extends the one before; a step cut with nothing of
 * it logged (its request, or its compaction's summary request, in flight) changes no derived history; no killed
 * summary request left a record (records ≤ summary requests made − summary requests killed).
 */
const checkAfterKill = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  before: ReadonlyArray<SessionEvent.SessionEvent>,
  killed: string,
  summaries: { readonly asked: number; readonly killed: number },
  problems: Array<string>
) => {
  const where = `after ${killed} (${events.length} events)`
  for (const v of LogCheck.checkLog(events)) problems.push(`${where}: checkLog ${v.rule} at ${v.seq}: ${v.message}`)
  const kept = before.every((e, i) => JSON.stringify(events[i]) === JSON.stringify(e))
  if (!kept || events.length < before.length) problems.push(`${where}: the log before the kill changed`)
  if (Either.isLeft(GoalReplay.foldGoal(events))) problems.push(`${where}: goal replay failed`)
  let open = events.length - 1
  while (open >= 0 && events[open]!.type !== "step/start") open--
  const cut = open >= 0 &&
    events.slice(open).every((e) => e.type === "step/start" || e.type === "step/end" || e.type === "turn/end")
  if (
    cut &&
    JSON.stringify(History.deriveMessages(events)) !== JSON.stringify(History.deriveMessages(events.slice(0, open)))
  ) {
    problems.push(`${where}: the cut step changed the derived history`)
  }
  const records = events.filter((e) => e.type === "compaction").length
  if (records > summaries.asked - summaries.killed) {
    problems.push(
      `${where}: ${records} compaction records from ${summaries.asked} summary requests, ${summaries.killed} killed`
    )
  }
}

/**
 * Runs a campaign in `directory` (the child started with `args`, see {@link runner}): children until the session has `config.turns` notes, `kills` of them killed at
 * the planned points; then the final checks.
 *
 * Contract: never fails; what did not hold is in `problems`.
 *
 * @since 0.0.0
 * @category running
 */
export const campaign = (
  args: ReadonlyArray<string>,
  config: Omit<LongSession.Config, "kill">,
  kills: number
): Effect.Effect<Report, never, CommandExecutor.CommandExecutor> =>
  Effect.gen(function*() {
    const problems: Array<string> = []
    const sent: Array<string> = []
    const killed: Array<string> = []
    let before: ReadonlyArray<SessionEvent.SessionEvent> = []
    let runs = 0
    const points = plan(config.seed, config.turns, kills)
    for (let k = 0; k <= points.length && runs < points.length + 3; k++) {
      const kill = points[k]
      const result = yield* runChild(args, kill === undefined ? config : { ...config, kill })
      runs++
      for (const id of result.sent) sent.push(id)
      if (result.killed === undefined && !result.done) {
        problems.push(`run ${runs} ended without DONE (${result.exit}): ${result.stdout.slice(-400)} ${result.stderr}`)
        break
      }
      if (result.done) {
        if (kill !== undefined) problems.push(`run ${runs} finished before its kill point ${kill.kind} ${kill.n}`)
        break
      }
      killed.push(result.killed!)
      const events = yield* Effect.orDie(reopen(config))
      checkAfterKill(events, before, result.killed!, {
        asked: readSizes(config.directory).filter((size) => size.kind === "summary").length,
        killed: killed.filter((k) => k.startsWith("KILL summary")).length
      }, problems)
      before = events
    }
    const events = yield* Effect.orDie(reopen(config))
    for (const v of LogCheck.checkLog(events)) problems.push(`final: checkLog ${v.rule} at ${v.seq}: ${v.message}`)
    // Every accepted message has exactly one fate: here, logged exactly once (nothing is cancelled).
    const ids = messageIds(events)
    const seen = new Map<string, number>()
    for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1)
    for (const [id, n] of seen) if (n > 1) problems.push(`final: ${id} is logged ${n} times`)
    for (const id of sent) if (!seen.has(id)) problems.push(`final: accepted ${id} is not in the log`)
    const notes = ids.filter((id) => id.startsWith("note-"))
    const expected = Array.from({ length: config.turns }, (_, i) => LongSession.noteId(i))
    if (JSON.stringify(notes) !== JSON.stringify(expected)) {
      problems.push(`final: the notes are not note-0…note-${config.turns - 1} in order (${notes.length} logged)`)
    }
    // Every request within the window, as the provider counted it when it arrived (killed ones too).
    const sizes = readSizes(config.directory)
    const largest = sizes.reduce((m, s) => Math.max(m, s.tokens), 0)
    for (const s of sizes) {
      if (s.tokens > config.window) problems.push(`a ${s.kind} request of ${s.tokens} tokens passed the window`)
    }
    for (const e of events) {
      const usage = e.type === "assistant/message" || e.type === "compaction" ? e.data.usage : undefined
      if (usage?.inputTokens !== undefined && usage.inputTokens > config.window) {
        problems.push(`seq ${e.seq}: logged usage of ${usage.inputTokens} input tokens passed the window`)
      }
    }
    const records = events.flatMap((e) => e.type === "compaction" ? [e] : [])
    const automatic = records.filter((r) => r.data.reason === "automatic").length
    const summaryKills = killed.filter((k) => k.startsWith("KILL summary")).length
    const summaries = sizes.filter((s) => s.kind === "summary").length
    if (records.length > summaries - summaryKills) {
      problems.push(`final: ${records.length} records from ${summaries} summary requests, ${summaryKills} killed`)
    }
    if (automatic < 3) problems.push(`only ${automatic} automatic compactions`)
    // The goals: replay folds the whole log; the first goal was completed, the second is paused, across compactions.
    const folded = GoalReplay.foldGoal(events)
    if (Either.isLeft(folded)) problems.push(`final: goal replay failed: ${folded.left.message}`)
    else {
      const goal = folded.right.goal
      if (goal?.objective !== LongSession.goals.second.objective || goal.phase !== "paused") {
        problems.push(`final: the goal is ${JSON.stringify(goal)}, not the second goal paused`)
      }
      const firstDone = events.some((e) =>
        e.type === "user/message" && e.data.source.kind === "goal" && e.data.content.some((b) =>
          b.type === "text" && b.text.includes(LongSession.goals.first.objective) && b.text.includes("\"complete\"")
        )
      )
      if (!firstDone) problems.push("final: the first goal was never completed")
      const paused = events.findLastIndex((e) => e.type === "user/message" && e.data.source.kind === "goal")
      if (!records.some((r) => events.indexOf(r) > paused)) {
        problems.push("final: no compaction after the last goal change (the goal state was not carried across one)")
      }
    }
    return {
      problems,
      runs,
      kills: killed,
      turns: notes.length,
      events: events.length,
      requests: sizes.length,
      largestRequest: largest,
      summaries,
      compactions: { automatic, manual: records.length - automatic }
    }
  })
