/**
 * `decodeGoalEvent` and `foldGoal` over hand-built logs (R113–R118): every operation folds, and every fail-loud
 * rule names the offending event's `seq` and its rule.
 */
import { assert, describe, it } from "@effect/vitest"
import type { MessageSource, SessionEvent } from "@harness/domain"
import { Either } from "effect"
import type { ReplayRule } from "../src/GoalReplay.js"
import { applyChange, decodeGoalEvent, foldGoal } from "../src/GoalReplay.js"
import type { Goal, GoalChange, GoalSnapshot } from "../src/GoalState.js"
import { empty, encodeChange, renderChange, renderRound } from "../src/GoalState.js"

const message = (seq: number, text: string, source: MessageSource.MessageSource): SessionEvent.SessionEvent => ({
  seq,
  time: 0,
  type: "user/message",
  data: { content: [{ type: "text", text }], source }
})

const changeEvent = (seq: number, change: GoalChange, override?: Partial<{ text: string; source: object }>) => {
  const ref = change.operation === "clear" ? change.cleared : change.goal
  const source = {
    kind: "goal" as const,
    goalId: ref.id,
    revision: ref.revision,
    round: 0,
    change: encodeChange(change),
    ...override?.source
  }
  return message(seq, override?.text ?? renderChange(change), source as MessageSource.MessageSource)
}

const roundEvent = (seq: number, goal: Goal, round: number, text = renderRound(goal, round)) =>
  message(seq, text, { kind: "goal", goalId: goal.id, revision: goal.revision, round })

const g1: Goal = { id: "g1", revision: 1, objective: "ship it", phase: "active", maxGoalRounds: 3 }

const snap = (
  operation: GoalSnapshot["operation"],
  goal: Goal,
  roundsStarted: number,
  updatedAt: number,
  createdAt = 100
): GoalSnapshot => ({ kind: "goal/change", version: 1, operation, goal, roundsStarted, createdAt, updatedAt })

const create = snap("create", g1, 0, 100)
const rev = (goal: Goal, patch: Partial<Goal>): Goal => ({ ...goal, revision: goal.revision + 1, ...patch })

/** The clear of `g1` at revision 2, stamped `clearedAt`. */
const clearG1 = (clearedAt: number): GoalChange => ({
  kind: "goal/change",
  version: 1,
  operation: "clear",
  cleared: { id: "g1", revision: 2 },
  clearedAt
})

/** `g1` created, then `operation` applied twice: to `goal`, then again to the next revision of it. */
const twice = (operation: GoalSnapshot["operation"], goal: Goal) => [
  changeEvent(0, create),
  changeEvent(1, snap(operation, goal, 0, 100)),
  changeEvent(2, snap(operation, rev(goal, {}), 0, 100))
]

const assertFails = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  seq: number,
  rule: ReplayRule,
  text?: string
) => {
  const folded = foldGoal(events)
  if (Either.isRight(folded)) return assert.fail(`expected ${rule} at seq ${seq}, but the log folded`)
  assert.strictEqual(folded.left.rule, rule, folded.left.message)
  assert.strictEqual(folded.left.seq, seq)
  if (text !== undefined) assert.include(folded.left.message, text)
}

describe("foldGoal", () => {
  it("R114, R117: every operation folds; other events and non-goal messages are ignored", () => {
    const paused = rev(g1, { phase: "paused" })
    const resumed = rev(paused, { phase: "active" })
    const edited = rev(resumed, { objective: "ship it twice" })
    const blocked = rev(edited, { phase: "blocked", blockedReason: { code: "model-reported", message: "stuck" } })
    const { blockedReason: _, ...unblocked } = rev(blocked, { phase: "active" })
    const done = rev(unblocked, { phase: "complete" })
    const g2: Goal = { id: "g2", revision: 1, objective: "next", phase: "active", maxGoalRounds: 5 }
    const log: Array<SessionEvent.SessionEvent> = [
      changeEvent(0, create),
      {
        seq: 1,
        time: 0,
        type: "turn/start",
        data: { turn: 1, trigger: { kind: "message", source: { kind: "user" } } }
      },
      message(2, "hello", { kind: "user" }),
      roundEvent(3, g1, 1),
      changeEvent(4, snap("pause", paused, 1, 110)),
      changeEvent(5, snap("resume", resumed, 1, 120)),
      roundEvent(6, resumed, 2),
      changeEvent(7, snap("edit", edited, 2, 130)),
      changeEvent(8, snap("block", blocked, 2, 130)),
      changeEvent(9, snap("resume", unblocked, 2, 140)),
      changeEvent(10, snap("complete", done, 2, 150)),
      changeEvent(11, snap("create", g2, 0, 160, 160)),
      changeEvent(12, {
        kind: "goal/change",
        version: 1,
        operation: "clear",
        cleared: { id: "g2", revision: 2 },
        clearedAt: 170
      })
    ]
    const mid = foldGoal(log.slice(0, 11))
    assert.deepStrictEqual(
      mid,
      Either.right({
        goal: done,
        roundsStarted: 2,
        createdAt: 100,
        updatedAt: 150,
        lastRef: undefined,
        usedIds: ["g1"]
      })
    )
    assert.deepStrictEqual(
      foldGoal(log),
      Either.right({ ...empty, lastRef: { id: "g2", revision: 2 }, usedIds: ["g1", "g2"] })
    )
  })

  it("R118: discrimination is by round: a positive round is a round, round 0 a change", () => {
    const round = decodeGoalEvent(roundEvent(3, g1, 1) as SessionEvent.SessionEventOf<"user/message">)
    assert.strictEqual(Either.getOrThrow(round)?._tag, "round")
    const change = decodeGoalEvent(changeEvent(0, create) as SessionEvent.SessionEventOf<"user/message">)
    assert.strictEqual(Either.getOrThrow(change)?._tag, "change")
    const user = decodeGoalEvent(message(1, "hi", { kind: "user" }) as SessionEvent.SessionEventOf<"user/message">)
    assert.strictEqual(Either.getOrThrow(user), undefined)
  })

  it("R117: a snapshot compares the goal's verifier and blocker by value, whatever the order of their keys", () => {
    const verifier = { command: "npm test", kind: "command" } as unknown as NonNullable<Goal["verifier"]>
    const blockedReason = { message: "stuck", code: "model-reported" } as unknown as NonNullable<Goal["blockedReason"]>
    const state = { ...empty, goal: { ...g1, verifier }, createdAt: 100, updatedAt: 100, usedIds: ["g1"] }
    const paused = rev(g1, { phase: "paused", verifier: { kind: "command", command: "npm test" } })
    assert.isTrue(Either.isRight(applyChange(state, snap("pause", paused, 0, 110))))
    const blocked = { ...state, goal: { ...g1, phase: "blocked" as const, blockedReason } }
    const edited = rev(g1, {
      phase: "blocked",
      blockedReason: { code: "model-reported", message: "stuck" },
      objective: "ship it now"
    })
    assert.isTrue(Either.isRight(applyChange(blocked, snap("edit", edited, 0, 110))))
    const moved = rev(g1, { phase: "paused", verifier: { kind: "command", command: "npm run test" } })
    const refused = applyChange(state, snap("pause", moved, 0, 110))
    assert.strictEqual(Either.isLeft(refused) ? refused.left.rule : "folded", "phase-rule")
  })

  describe("R116: decoding fails loudly", () => {
    it("goal-looking content without a goal source", () =>
      assertFails(
        [message(0, renderChange(create), { kind: "plugin", plugin: "p" })],
        0,
        "mismatched-source-attribution"
      ))
    it("a change whose ref is not the source's", () =>
      assertFails([changeEvent(0, create, { source: { revision: 2 } })], 0, "mismatched-source-attribution"))
    it("an empty goal id, a revision below 1, a negative round", () => {
      assertFails([changeEvent(0, create, { source: { goalId: "" } })], 0, "invalid-source")
      assertFails([changeEvent(0, create, { source: { revision: 0 } })], 0, "invalid-source")
      assertFails([changeEvent(0, create, { source: { round: -1 } })], 0, "invalid-source")
    })
    it("a round-zero source without its change", () =>
      assertFails([changeEvent(0, create, { source: { change: undefined } })], 0, "lacks-change"))
    it("a change with an invalid shape: an extra key, version 2, an unnormalised objective, a bad blocker code, time reversed", () => {
      const encoded = encodeChange(create)
      assertFails([changeEvent(0, create, { source: { change: { ...encoded, extra: 1 } } })], 0, "invalid-change")
      assertFails([changeEvent(0, create, { source: { change: { ...encoded, version: 2 } } })], 0, "invalid-change")
      const spaced = { ...create, goal: { ...g1, objective: " ship it" } }
      assertFails(
        [changeEvent(0, spaced, { source: { change: { ...encoded, goal: { ...g1, objective: " ship it" } } } })],
        0,
        "invalid-change"
      )
      const badCode = snap(
        "block",
        rev(g1, { phase: "blocked", blockedReason: { code: "Bad Code", message: "x" } }),
        0,
        100
      )
      assertFails([changeEvent(0, create), changeEvent(1, badCode)], 1, "invalid-change", "kebab")
      assertFails([changeEvent(0, snap("create", g1, 0, 50, 100))], 0, "invalid-change", "updatedAt")
      const noReason = snap("block", rev(g1, { phase: "blocked" }), 0, 100)
      assertFails([changeEvent(0, create), changeEvent(1, noReason)], 1, "invalid-change", "blockedReason")
    })
    it("content that is not the canonical rendering of the change", () =>
      assertFails(
        [changeEvent(0, create, { text: renderChange(create) + " " })],
        0,
        "mismatched-content",
        "model-visible"
      ))
  })

  describe("R117: folding fails loudly", () => {
    it("create: revision 1, active, no rounds, no unfinished goal, a fresh id", () => {
      assertFails([changeEvent(0, snap("create", { ...g1, revision: 2 }, 0, 100))], 0, "invalid-create")
      const other: Goal = { ...g1, id: "g2" }
      assertFails([changeEvent(0, create), changeEvent(1, snap("create", other, 0, 100))], 1, "invalid-create")
      const clear = clearG1(100)
      assertFails([changeEvent(0, create), changeEvent(1, clear), changeEvent(2, create)], 2, "reused-id")
    })
    it("create while the current goal is active, paused or blocked (not complete, not cleared) is invalid", () => {
      const other = snap("create", { ...g1, id: "g2" }, 0, 100)
      const blockedReason = { code: "stuck", message: "needs a person" }
      const phases = [
        ["pause", rev(g1, { phase: "paused" })],
        ["block", rev(g1, { phase: "blocked", blockedReason })],
        ["complete", rev(g1, { phase: "complete" })]
      ] as const
      for (const [operation, goal] of phases) {
        const events = [changeEvent(0, create), changeEvent(1, snap(operation, goal, 0, 100)), changeEvent(2, other)]
        if (operation === "complete") {
          const folded = foldGoal(events)
          assert.isTrue(Either.isRight(folded), "a create after a complete goal folds")
          if (Either.isRight(folded)) assert.strictEqual(folded.right.goal?.id, "g2")
        } else {
          assertFails(events, 2, "invalid-create", `g1 is ${goal.phase}`)
        }
      }
    })
    it("a change without a current goal, for another goal, or not exactly one revision ahead", () => {
      assertFails([changeEvent(0, snap("pause", rev(g1, { phase: "paused" }), 0, 100))], 0, "no-current-goal")
      assertFails(
        [changeEvent(0, create), changeEvent(1, snap("pause", { ...rev(g1, { phase: "paused" }), id: "zz" }, 0, 100))],
        1,
        "different-goal"
      )
      assertFails(
        [changeEvent(0, create), changeEvent(1, snap("pause", { ...g1, revision: 3, phase: "paused" }, 0, 100))],
        1,
        "revision-not-advanced",
        "must advance the current goal by one revision"
      )
    })
    it("changed createdAt or roundsStarted, updatedAt going back, a clear before the last update", () => {
      const paused = rev(g1, { phase: "paused" })
      assertFails([changeEvent(0, create), changeEvent(1, snap("pause", paused, 1, 100))], 1, "changed-invariant")
      assertFails([changeEvent(0, create), changeEvent(1, snap("pause", paused, 0, 120, 90))], 1, "changed-invariant")
      assertFails(
        [
          changeEvent(0, snap("create", g1, 0, 100)),
          changeEvent(1, snap("pause", paused, 0, 120)),
          changeEvent(2, snap("resume", rev(paused, { phase: "active" }), 0, 110))
        ],
        2,
        "changed-invariant",
        "backwards"
      )
      const clear = clearG1(50)
      assertFails([changeEvent(0, create), changeEvent(1, clear)], 1, "changed-invariant")
    })
    it("phase rules: pause only when active, block only when active, resume below the cap, no objective change", () => {
      const paused = rev(g1, { phase: "paused" })
      assertFails(twice("pause", paused), 2, "phase-rule")
      assertFails(
        [changeEvent(0, create), changeEvent(1, snap("pause", { ...paused, objective: "other" }, 0, 100))],
        1,
        "phase-rule"
      )
      assertFails(
        [
          changeEvent(0, create),
          changeEvent(1, snap("pause", paused, 0, 100)),
          changeEvent(
            2,
            snap("block", rev(paused, { phase: "blocked", blockedReason: { code: "x", message: "" } }), 0, 100)
          )
        ],
        2,
        "phase-rule"
      )
      assertFails(
        [changeEvent(0, create), changeEvent(1, snap("edit", rev(g1, { phase: "paused" }), 0, 100))],
        1,
        "phase-rule"
      )
      const capped: Goal = { ...g1, maxGoalRounds: 1 }
      const cappedPaused = rev(capped, { phase: "paused" })
      assertFails(
        [
          changeEvent(0, snap("create", capped, 0, 100)),
          roundEvent(1, capped, 1),
          changeEvent(2, snap("pause", cappedPaused, 1, 100)),
          changeEvent(3, snap("resume", rev(cappedPaused, { phase: "active" }), 1, 100))
        ],
        3,
        "phase-rule",
        "roundsStarted < maxGoalRounds"
      )
      const done = rev(g1, { phase: "complete" })
      assertFails(twice("complete", done), 2, "phase-rule")
    })
    it("a round that is not exactly the next one of the current active goal, or whose content is not canonical", () => {
      assertFails([changeEvent(0, create), roundEvent(1, g1, 2)], 1, "round-out-of-order")
      assertFails([roundEvent(0, g1, 1)], 0, "round-out-of-order")
      const paused = rev(g1, { phase: "paused" })
      assertFails(
        [changeEvent(0, create), changeEvent(1, snap("pause", paused, 0, 100)), roundEvent(2, paused, 1)],
        2,
        "round-out-of-order"
      )
      assertFails([changeEvent(0, create), roundEvent(1, { ...g1, revision: 2 }, 1)], 1, "round-out-of-order")
      const capped: Goal = { ...g1, maxGoalRounds: 1 }
      assertFails(
        [changeEvent(0, snap("create", capped, 0, 100)), roundEvent(1, capped, 1), roundEvent(2, capped, 2)],
        2,
        "round-out-of-order"
      )
      assertFails([changeEvent(0, create), roundEvent(1, g1, 1, "do something else")], 1, "mismatched-content")
    })
  })
})
