/**
 * Shared helpers of the goal tests: an agent with the goal plugin over the scripted model, compact views of the
 * log, and the fold of a log as the service would show it.
 */
import { NodeContext } from "@effect/platform-node"
import { assert } from "@effect/vitest"
import type { Agent } from "@harness/agent"
import type { SessionEvent } from "@harness/domain"
import { ScriptedModel as S } from "@harness/testkit"
import { Effect, Either, Layer, Schedule } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { foldGoal } from "../src/GoalReplay.js"
import * as Goals from "../src/Goals.js"

/** The scripted model and a real command executor. */
export const env = (replies: ReadonlyArray<S.Reply>) => Layer.merge(S.layer(replies), NodeContext.layer)

/** An agent with the goal plugin attached, in the test's scope. */
export const goalAgent = (options?: Goals.Options, agentOptions?: Agent.Options) =>
  Goals.makeAgent({ model: "m", ...agentOptions }, options)

/** A fresh directory, removed with the test's scope. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "harness-goal-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Whether a process runs: a zombie (killed, waiting to be reaped by a PID 1 that may never reap it) does not. */
const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)
    return state !== "Z" && state !== "X"
  } catch {
    return false
  }
}

/**
 * Whether process `pid` is still alive 10 s on (real time). A killed process is reaped a moment after SIGKILL:
 * retried as a failure (which `retry` retries, unlike a thrown assertion) on a loaded machine.
 */
export const outlives = (pid: number): Effect.Effect<boolean> =>
  Effect.suspend(() => alive(pid) ? Effect.fail("alive") : Effect.void).pipe(
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("10 seconds"))),
    Effect.isFailure
  )

/** The code a refused operation fails with (`GoalReplayError` for a corrupt log). */
export const codeOf = (error: Goals.Failure): string => error._tag === "GoalError" ? error.code : error._tag

/** Calls a tool with JSON arguments. */
export const call = (name: string, args: object = {}) => S.toolCallResponse(S.toolCall(name, args))

/** The text of a message's first block. */
const first = (content: ReadonlyArray<{ readonly type: string; readonly text?: string }>) =>
  content[0]?.type === "text" ? content[0].text ?? "" : ""

/**
 * A compact log: `change:<operation>@<revision>`, `round:<n>`, `user:<text>`, `plugin:<first line>`,
 * `turn/end:<reason>`, `tool/result:<name>[:<code>]`; other events left out.
 */
export const goalShape = (log: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<string> =>
  log.flatMap((event) => {
    switch (event.type) {
      case "user/message": {
        const source = event.data.source
        if (source.kind === "goal") {
          if (source.round > 0) return [`round:${source.round}`]
          const change = source.change as { readonly operation: string }
          return [`change:${change.operation}@${source.revision}`]
        }
        if (source.kind === "plugin") return [`plugin:${first(event.data.content).split("\n")[0]}`]
        return [`user:${first(event.data.content)}`]
      }
      case "turn/end":
        return [`turn/end:${event.data.reason.kind}`]
      case "tool/result":
        return [
          event.data.error === undefined
            ? `tool/result:${event.data.name}`
            : `tool/result:${event.data.name}:${event.data.error.code}`
        ]
      default:
        return []
    }
  })

/** Asserts that the log folds, and to the state the service shows. */
export const assertFoldMatches = (agent: Agent.Service, goals: Goals.Service) =>
  Effect.gen(function*() {
    const folded = foldGoal(yield* agent.log)
    if (Either.isLeft(folded)) assert.fail(`the log does not fold: ${folded.left.message} (seq ${folded.left.seq})`)
    const { activation: _, ...view } = yield* goals.get
    assert.deepStrictEqual(folded.right, view)
    return folded.right
  })

/** `goalShape` of the round `round` in which the model marks the goal complete (revision `revision`) and the turn ends. */
export const completingRound = (round: number, revision: number): ReadonlyArray<string> => [
  `round:${round}`,
  "tool/result:update_goal",
  `change:complete@${revision}`,
  "turn/end:completed"
]
