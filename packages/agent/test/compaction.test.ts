/**
 * Compaction (ADR 0052, R144–R153): a `compaction` record makes its summary stand for the history before it; an
 * agent with a context window compacts before a step whose estimate passes the threshold; `agent.compact` compacts
 * on demand; a cancelled compaction leaves no record and the history as it was; steering sent during a compaction
 * lands after it.
 */
import { AiError, type Prompt, Tokenizer } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import { Message, type SessionEvent } from "@harness/domain"
import { History, LogCheck } from "@harness/session"
import { ScriptedModel as S } from "@harness/testkit"
import { Deferred, Effect } from "effect"
import { setup } from "./fixtures.js"

const textOfMessage = (message: Prompt.Message): string =>
  typeof message.content === "string"
    ? message.content
    : message.content.map((part) => ("text" in part ? part.text : "")).join("")

/** The test's own measure of a request: ⌈bytes / 4⌉ of its messages' texts (all ASCII here). */
const tokensOf = (prompt: Prompt.Prompt): number =>
  Math.ceil(prompt.content.reduce((n, message) => n + textOfMessage(message).length, 0) / 4)

const compactions = (log: ReadonlyArray<SessionEvent.SessionEvent>) =>
  log.filter((e): e is SessionEvent.SessionEventOf<"compaction"> => e.type === "compaction")

const pad = (label: string) => `${label} ${"x".repeat(180)}`

describe("compaction", () => {
  it.scoped(
    "R144, R145, R146, R147: 2 000 turns on a 1 000-token window: every request fits, compactions recur, the log is clean",
    () =>
      Effect.gen(function*() {
        const turns = 2000
        const window = 1000
        const [summariser, summaries] = yield* S.make(
          Array.from({ length: 1000 }, (_, i) => S.textResponse(`summary ${i}`))
        )
        const { agent, model } = yield* setup({
          compaction: { contextWindow: window, model: summariser, modelLabel: "summariser" }
        })
        yield* model.push(...Array.from({ length: turns }, (_, i) => S.textResponse(pad(`answer ${i}`))))
        for (let i = 0; i < turns; i++) {
          yield* agent.followup(Message.make(pad(`question ${i}`)))
          yield* agent.whenIdle
        }
        const log = yield* agent.log
        assert.deepStrictEqual(LogCheck.checkLog(log), [])
        const records = compactions(log)
        assert.isAbove(records.length, 50)
        const requests = yield* model.requests
        assert.strictEqual(requests.length, turns)
        for (const request of requests) assert.isAtMost(tokensOf(request.prompt), window)
        for (const request of yield* summaries.requests) assert.isAtMost(tokensOf(request.prompt), window)
        // Every record is automatic, replaces everything before its step, and names the summariser.
        for (const record of records) {
          assert.strictEqual(record.data.reason, "automatic")
          assert.strictEqual(record.data.model, "summariser")
          assert.isAbove(record.data.estimate, 0.8 * window)
        }
        // The last request: the latest summary, then what followed it.
        const last = records[records.length - 1]!
        const lastPrompt = requests[requests.length - 1]!.prompt.content
        assert.strictEqual(textOfMessage(lastPrompt[0]!), last.data.summary)
        assert.deepStrictEqual(History.deriveMessages(log).map(textOfMessage)[0], last.data.summary)
      }).pipe(Effect.provide(S.layer())),
    60_000
  )

  it.scoped("R149: agent.compact on an idle agent runs a compaction turn; the next request starts with the summary", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.textResponse("A1"), S.textResponse("the summary"), S.textResponse("A2"))
      yield* agent.followup(Message.make("P1"))
      yield* agent.whenIdle
      yield* agent.compact()
      yield* agent.whenIdle
      yield* agent.followup(Message.make("P2"))
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      const turnStarts = log.filter((e) => e.type === "turn/start").map((e) => e.data.trigger.kind)
      assert.deepStrictEqual(turnStarts, ["message", "compaction", "message"])
      const [record] = compactions(log)
      assert.strictEqual(record?.data.summary, "the summary")
      assert.strictEqual(record?.data.reason, "manual")
      assert.strictEqual(record?.data.messages, 2)
      const requests = yield* model.requests
      // The summary request carried the history and the instruction; the next one the summary and the new prompt.
      assert.deepStrictEqual(requests[1]!.prompt.content.slice(0, 2).map(textOfMessage), ["P1", "A1"])
      assert.deepStrictEqual(requests[2]!.prompt.content.map(textOfMessage), ["the summary", "P2"])
      // The log keeps everything: the first turn's prompt is still there.
      assert.isTrue(log.some((e) => e.type === "user/message" && e.data.content[0].text === "P1"))
      // Busy: refused.
      yield* model.push(S.hanging(S.text("…")))
      yield* agent.followup(Message.make("P3"))
      yield* Effect.repeat(model.requestCount, { until: (n) => n === 4 })
      const busy = yield* Effect.flip(agent.compact())
      assert.strictEqual(busy._tag, "AgentBusyError")
      yield* agent.cancel("user")
      yield* agent.whenIdle
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R148: a cancelled compaction leaves no record and the history as it was; the log stays clean", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* setup()
      yield* model.push(S.textResponse("A1"), S.hanging(S.text("half a summ")))
      yield* agent.followup(Message.make("P1"))
      yield* agent.whenIdle
      const derivedBefore = History.deriveMessages(yield* agent.log)
      yield* agent.compact()
      // The summary request is running (its step is open) once the model has been asked.
      yield* Effect.repeat(model.requestCount, { until: (n) => n === 2 })
      yield* agent.cancel("user")
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      assert.deepStrictEqual(compactions(log), [])
      assert.deepStrictEqual(History.deriveMessages(log), derivedBefore)
      const last = log[log.length - 1]!
      assert.strictEqual(last.type, "turn/end")
      assert.deepStrictEqual(last.type === "turn/end" ? last.data.reason : undefined, { kind: "aborted" })
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R151: steering sent during a compaction lands after the record, followups after the turn", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { agent, model } = yield* setup({
        hooks: {
          beforeCompact: (_, next) => Effect.zipRight(Deferred.await(gate), next)
        }
      })
      yield* model.push(
        S.textResponse("A1"),
        S.textResponse("the summary"),
        S.textResponse("after steering"),
        S.textResponse("followup answer")
      )
      yield* agent.followup(Message.make("P1"))
      yield* agent.whenIdle
      yield* agent.compact()
      // The compaction waits in its hook; an idle-looking agent is running: steering joins its turn.
      yield* agent.steer(Message.make("S"))
      yield* agent.followup(Message.make("F"))
      yield* Deferred.succeed(gate, undefined)
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      const at = (pred: (e: SessionEvent.SessionEvent) => boolean) => log.findIndex(pred)
      const record = at((e) => e.type === "compaction")
      const steering = at((e) => e.type === "steering/message" && e.data.content[0].text === "S")
      const followup = at((e) => e.type === "user/message" && e.data.content[0].text === "F")
      assert.isAbove(record, 0)
      assert.isAbove(steering, record)
      assert.isAbove(followup, steering)
      const requests = yield* model.requests
      assert.deepStrictEqual(requests[2]!.prompt.content.map(textOfMessage), ["the summary", "S"])
    }).pipe(Effect.provide(S.layer())))

  it.scoped("R150: beforeCompact may replace the summary (no model request) or block the compaction", () =>
    Effect.gen(function*() {
      let blocked = false
      const { agent, model } = yield* setup({
        hooks: {
          beforeCompact: () =>
            Effect.succeed(
              blocked ? { kind: "block", reason: "not now" } as const : { kind: "replace", summary: "mine" } as const
            )
        }
      })
      yield* model.push(S.textResponse("A1"))
      yield* agent.followup(Message.make("P1"))
      yield* agent.whenIdle
      yield* agent.compact()
      yield* agent.whenIdle
      blocked = true
      yield* agent.compact()
      yield* agent.whenIdle
      const log = yield* agent.log
      assert.deepStrictEqual(LogCheck.checkLog(log), [])
      assert.deepStrictEqual(compactions(log).map((r) => [r.data.summary, r.data.model]), [["mine", "beforeCompact"]])
      assert.strictEqual(yield* model.requestCount, 1)
      // The blocked compaction opened no turn.
      assert.strictEqual(log.filter((e) => e.type === "turn/start").length, 2)
    }).pipe(Effect.provide(S.layer())))

  /**
   * Five turns whose replies report 100 input tokens per request message, on an 800-token threshold: before turn
   * 5's step the last report (turn 4: 7 messages, 700 tokens) plus the two messages since decide. A toy tokenizer
   * counting 100 per message makes that 900 (a compaction); the byte heuristic counts "A4" and "P5" as 1 token.
   */
  const fiveTurns = Effect.gen(function*() {
    const [summariser] = yield* S.make([S.textResponse("summary")])
    const { agent, model } = yield* setup({ compaction: { contextWindow: 1000, model: summariser } })
    yield* model.push(
      ...Array.from(
        { length: 5 },
        (_, i) => ({ ...S.textResponse(`A${i + 1}`), usage: { inputTokens: 100 * (2 * i + 1) } })
      )
    )
    for (let i = 1; i <= 5; i++) {
      yield* agent.followup(Message.make(`P${i}`))
      yield* agent.whenIdle
    }
    const log = yield* agent.log
    assert.deepStrictEqual(LogCheck.checkLog(log), [])
    return compactions(log).map((r) => [r.data.turn, r.data.estimate])
  })

  const perMessage = (tokens: number) =>
    Tokenizer.make({
      tokenize: (prompt) => Effect.succeed(Array.from({ length: tokens * prompt.content.length }, () => 0))
    })

  it.scoped("R220: a provider's Tokenizer counts the prompt after the last reported usage, and decides the compaction", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* Effect.provideService(fiveTurns, Tokenizer.Tokenizer, perMessage(100)),
        [[5, 900]],
        "700 reported + 2 messages × 100"
      )
      assert.deepStrictEqual(yield* fiveTurns, [], "the byte heuristic: 700 + 1")
      const failing = Tokenizer.make({
        tokenize: () => Effect.fail(new AiError.UnknownError({ module: "test", method: "tokenize", description: "no" }))
      })
      assert.deepStrictEqual(
        yield* Effect.provideService(fiveTurns, Tokenizer.Tokenizer, failing),
        [],
        "a failing tokenizer leaves the estimate to the heuristic"
      )
    }).pipe(Effect.provide(S.layer())))
})
