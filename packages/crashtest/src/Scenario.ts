/**
 * What a crash-test child does, as data derived from a seed: the sends, cancels and pauses it makes, the replies
 * of its scripted model, and where it is to be killed. The same seed always gives the same scenario, so a failing
 * kill is reproduced by its seed and kill point alone.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"

/**
 * One thing the child does, in order.
 *
 * - `send`: a preset (`followup`, `steer`, `inject`) or the unpreset `park` (next-turn, no wake-up) with an explicit
 *   message id (so that ids are known to the parent before the child returns them, and so that a resend is
 *   idempotent);
 * - `resend`: the same message id again (it must come back unchanged and deliver nothing twice);
 * - `cancel`: `cancel("user", { keepInbox })`;
 * - `pause`: a real-time sleep, so that turns, streams and tools progress between sends;
 * - `idle`: waits for `whenIdle`.
 *
 * @since 0.0.0
 * @category models
 */
export const Op = Schema.Union(
  Schema.TaggedStruct("send", {
    preset: Schema.Literal("followup", "steer", "inject", "park"),
    id: Schema.String,
    text: Schema.String
  }),
  Schema.TaggedStruct("resend", {
    preset: Schema.Literal("followup", "steer"),
    id: Schema.String,
    text: Schema.String
  }),
  Schema.TaggedStruct("cancel", { keepInbox: Schema.Boolean }),
  Schema.TaggedStruct("pause", { millis: Schema.Int.pipe(Schema.nonNegative()) }),
  Schema.TaggedStruct("idle", {})
)
/** @since 0.0.0 */
export type Op = typeof Op.Type

/**
 * One scripted model reply: text pieces (each one stream chunk), optional reasoning, and `work` tool calls (each
 * sleeps `millis`), after a real-time `delay`.
 *
 * @since 0.0.0
 * @category models
 */
export interface ReplyPlan {
  readonly delayMillis: number
  readonly reasoning: string | undefined
  readonly texts: ReadonlyArray<string>
  readonly tools: ReadonlyArray<{ readonly millis: number }>
}

/**
 * The places where a child can be stopped for the kill (see the README's table).
 *
 * - `append-before`: before the n-th store append is handed to the store;
 * - `append-after`: after the n-th store append was acknowledged (durable), before the log publishes it;
 * - `torn-write`: inside the n-th store append, with the write half done (JSONL: half the bytes of the commit are
 *   written; SQLite: the transaction has updated the session row and not yet inserted the records);
 * - `stream`: after the n-th part of any model stream;
 * - `tool`: inside the n-th `work` tool call, after it started;
 * - `sent`: right after the n-th send or resend returned its id;
 * - `cancel`: after the n-th cancel returned, at the `after`-th store append that follows it (0: at once), so while
 *   the turn is unwinding.
 *
 * @since 0.0.0
 * @category models
 */
export const KillKind = Schema.Literal(
  "append-before",
  "append-after",
  "torn-write",
  "stream",
  "tool",
  "sent",
  "cancel"
)
/** @since 0.0.0 */
export type KillKind = typeof KillKind.Type

/**
 * A kill point: the `n`-th (from 1) occurrence of `kind` (`after` only for `cancel`).
 *
 * @since 0.0.0
 * @category models
 */
export const KillPoint = Schema.Struct({
  kind: KillKind,
  n: Schema.Int.pipe(Schema.positive()),
  after: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { exact: true })
})
/** @since 0.0.0 */
export type KillPoint = typeof KillPoint.Type

/**
 * How often each kill kind occurred in a run that was not killed (a census), so kill points can be chosen among
 * those that happen.
 *
 * @since 0.0.0
 * @category models
 */
export type Census = { readonly [K in KillKind]: number }

/**
 * A scenario: the seed it came from, the ops and the model's replies.
 *
 * @since 0.0.0
 * @category models
 */
export interface Scenario {
  readonly seed: number
  readonly ops: ReadonlyArray<Op>
  readonly replies: ReadonlyArray<ReplyPlan>
}

/**
 * A small deterministic generator (mulberry32): the scenario is a pure function of its seed, computed before any
 * Effect runs, in the parent and the child alike.
 *
 * @since 0.0.0
 * @category constructors
 */
export const prng = (seed: number) => {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  /** An integer in `[min, max]`. */
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1))
  const pick = <A>(items: ReadonlyArray<A>): A => items[int(0, items.length - 1)]!
  return { next, int, pick }
}

const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]

/**
 * The scenario of a seed. `round` distinguishes the runs of one session (a resumed run gets fresh message ids).
 *
 * Contract: pure and deterministic; every message id is unique within the session (`m<seed>-<round>-<i>`); a
 * `resend` repeats an id sent earlier in the same scenario; there are always more replies than the ops can use up
 * in practice (a request with no reply left would end its turn with an error, which is still a valid log).
 *
 * @since 0.0.0
 * @category constructors
 */
export const make = (seed: number, round = 0): Scenario => {
  const random = prng(seed * 7919 + round)
  const ops: Array<Op> = []
  const sent: Array<{ readonly id: string; readonly text: string }> = []
  const count = random.int(6, 12)
  for (let i = 0; i < count; i++) {
    const roll = random.next()
    if (roll < 0.55) {
      const preset = random.pick(["followup", "followup", "steer", "inject", "park"] as const)
      const id = `m${seed}-${round}-${i}`
      const text = `${preset} ${random.pick(words)} ${i}`
      ops.push({ _tag: "send", preset, id, text })
      if (preset === "followup" || preset === "steer") sent.push({ id, text })
    } else if (roll < 0.65 && sent.length > 0) {
      const again = random.pick(sent)
      ops.push({ _tag: "resend", preset: "followup", id: again.id, text: again.text })
    } else if (roll < 0.75) {
      ops.push({ _tag: "cancel", keepInbox: random.next() < 0.5 })
    } else if (roll < 0.95) {
      ops.push({ _tag: "pause", millis: random.int(1, 25) })
    } else {
      ops.push({ _tag: "idle" })
    }
  }
  // Always end with work in flight: a waking send and a pause, then wait for the agent to finish.
  ops.push({ _tag: "send", preset: "followup", id: `m${seed}-${round}-last`, text: "last words" })
  ops.push({ _tag: "pause", millis: random.int(1, 10) })
  ops.push({ _tag: "idle" })
  const replies: Array<ReplyPlan> = []
  for (let i = 0; i < 80; i++) {
    const withTools = random.next() < 0.4
    replies.push({
      delayMillis: random.int(0, 4),
      reasoning: random.next() < 0.3 ? `thinking about ${random.pick(words)}` : undefined,
      texts: Array.from({ length: random.int(withTools ? 0 : 1, 4) }, (_, j) => `${random.pick(words)}${j} `),
      tools: withTools ? Array.from({ length: random.int(1, 3) }, () => ({ millis: random.int(1, 15) })) : []
    })
  }
  return { seed, ops, replies }
}

/**
 * The kill points a census allows, each kind taken in turn, chosen from the seed: `count` points, spread over the
 * kinds that occurred.
 *
 * @since 0.0.0
 * @category constructors
 */
export const killPoints = (seed: number, census: Census, count: number): ReadonlyArray<KillPoint> => {
  const random = prng(seed * 104_729 + 17)
  const kinds = KillKind.literals.filter((kind) => census[kind] > 0)
  const points: Array<KillPoint> = []
  const offset = random.int(0, Math.max(0, kinds.length - 1))
  for (let i = 0; i < count && kinds.length > 0; i++) {
    const kind = kinds[(offset + i) % kinds.length]!
    const n = random.int(1, census[kind])
    points.push(kind === "cancel" ? { kind, n, after: random.int(0, 3) } : { kind, n })
  }
  return points
}
