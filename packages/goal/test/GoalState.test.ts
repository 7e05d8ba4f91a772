/**
 * `encodeChange` is the canonical JSON of a change (R113–R114): written by hand, key by key, because its key order
 * is the durable format. It must agree with the `GoalChange` schema's own encoding — same keys, same order, same
 * values — whatever the key order of the change it is given.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import type { Goal, GoalChange as GoalChangeType } from "../src/GoalState.js"
import { encodeChange, GoalChange } from "../src/GoalState.js"

/** The same object with its keys (and its nested objects' keys) in the order `order` picks. */
const reordered = (value: object, order: ReadonlyArray<number>): object => {
  const entries = Object.entries(value).map(([k, v]) =>
    [k, typeof v === "object" && v !== null ? reordered(v, order) : v] as const
  )
  const keyed = entries.map((entry, i) => [order[i % order.length]! + i / 1000, entry] as const)
  return Object.fromEntries([...keyed].sort((a, b) => a[0] - b[0]).map(([, entry]) => entry))
}

const text = fc.string({ minLength: 1, maxLength: 12 }).map((s) => s.trim()).filter((s) => s.length > 0)
const positive = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })
const time = fc.nat({ max: 2 ** 45 })

const goal: fc.Arbitrary<Goal> = fc.record({
  id: text,
  revision: positive,
  objective: text,
  phase: fc.constantFrom("active" as const, "paused" as const, "blocked" as const, "complete" as const),
  maxGoalRounds: positive,
  maxTokens: fc.option(positive, { nil: undefined }),
  deadline: fc.option(time, { nil: undefined }),
  verifier: fc.option(
    fc.oneof(
      text.map((command) => ({ kind: "command" as const, command })),
      text.map((name) => ({ kind: "effect" as const, name }))
    ),
    { nil: undefined }
  ),
  code: fc.stringMatching(/^[a-z0-9]+(-[a-z0-9]+)*$/),
  message: fc.string({ maxLength: 12 })
}).map(({ code, deadline, maxTokens, message, verifier, ...rest }) => ({
  ...rest,
  ...(maxTokens === undefined ? {} : { maxTokens }),
  ...(deadline === undefined ? {} : { deadline }),
  ...(verifier === undefined ? {} : { verifier }),
  ...(rest.phase === "blocked" ? { blockedReason: { code, message } } : {})
}))

const change: fc.Arbitrary<GoalChangeType> = fc.oneof(
  fc.record({
    operation: fc.constantFrom(
      "create" as const,
      "edit" as const,
      "pause" as const,
      "resume" as const,
      "complete" as const,
      "block" as const
    ),
    goal,
    roundsStarted: fc.nat(),
    createdAt: time,
    later: fc.nat({ max: 1000 })
  }).map(({ later, ...c }) => ({
    kind: "goal/change" as const,
    version: 1 as const,
    ...c,
    updatedAt: c.createdAt + later
  })),
  fc.record({ cleared: fc.record({ id: text, revision: positive }), clearedAt: time }).map((c) => ({
    kind: "goal/change" as const,
    version: 1 as const,
    operation: "clear" as const,
    ...c
  }))
)

const encode = Schema.encodeSync(GoalChange)

describe("encodeChange", () => {
  it.prop(
    "is the schema's encoding, key for key and in the same order, whatever order the change's keys are in",
    { change, order: fc.array(fc.nat({ max: 20 }), { minLength: 1, maxLength: 9 }) },
    ({ change, order }) => {
      const shuffled = reordered(change, order) as GoalChangeType
      const canonical = encodeChange(shuffled)
      assert.deepStrictEqual(canonical, encode(change))
      // Key order is the property under test here, so the serialisations are compared, not the values.
      assert.strictEqual(JSON.stringify(canonical), JSON.stringify(encode(shuffled)))
      assert.strictEqual(JSON.stringify(canonical), JSON.stringify(encodeChange(change)))
    }
  )
})
