/**
 * The history snapshot property (R226, R227, ADR 0068), run by every backend beside its conformance suite: random
 * sessions — prompt, tool, cancelled, max-tokens, steering and raw-argument turns, idle context, inbox edits,
 * compactions (a manual compaction turn, and one at the first step of a prompted turn), rolled-back turns, resumes in
 * the middle, and a crash at the end — written through `SessionLog` with snapshots every few events. Then:
 *
 * 1. a fresh store instance opens the session from its snapshot: the history the next request is built from (its
 *    messages, compaction and rollback ranges, and the request header) is the whole-log derivation of a full replay;
 * 2. the snapshot made stale (an earlier one), damaged (a body of another length, not JSON, an entry of another kind,
 *    an empty array), of an unknown or older version, or without its body: the same history.
 *
 * ```ts
 * import { historyResumeProperty } from "@harness/session/test/historyResume"
 * historyResumeProperty("sqlite", Effect.map(tempDir, (dir) => SqliteStore.layer({ filename: path.join(dir, "s.db") })))
 * ```
 *
 * `place` makes, in the run's scope, a place for sessions and returns a layer that opens a store on it; each build of
 * that layer is a new store instance on the same data (the memory store gives the same instance each time).
 *
 * @since 0.0.0
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, MessageSource, type SessionEvent, type Store } from "@harness/domain"
import {
  abortedTurn,
  block,
  ev,
  maxTokensTurn,
  promptTurn,
  rawArgumentsTurn,
  sessionId,
  steeringTurn,
  toolTurn
} from "@harness/testkit/Events"
import type { Scope } from "effect"
import { Context, Effect, FastCheck as fc, Layer, Option } from "effect"
import * as History from "../src/History.js"
import * as SessionLog from "../src/SessionLog.js"
import { type Service, SessionStore, type SnapshotHead } from "../src/SessionStore.js"

const sid = sessionId("history-resume")

/** The whole turns a random session draws from (the testkit's catalogue). */
export const turnKinds = [
  (t: number) => promptTurn(t, `Prompt ${t}`, `Answer ${t}`),
  (t: number) => toolTurn(t, `Tools ${t}`, [{ id: `c${t}`, name: "read", args: "{\"p\":1}", result: "ok" }], "Done."),
  abortedTurn,
  maxTokensTurn,
  steeringTurn,
  rawArgumentsTurn
] as const

/** One step of a random session. */
type Step =
  | { readonly _tag: "turn"; readonly kind: number }
  | { readonly _tag: "idle" }
  | { readonly _tag: "edit"; readonly settle: boolean }
  | { readonly _tag: "compaction"; readonly manual: boolean }
  | { readonly _tag: "rollback"; readonly late: boolean }
  | { readonly _tag: "resume" }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ _tag: fc.constant("turn" as const), kind: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("idle" as const) }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("edit" as const), settle: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("compaction" as const), manual: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("rollback" as const), late: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("resume" as const) }) }
)

/** An `inbox/accepted` record of a queued prompt. */
export const accepted = (id: string): Omit<Store.InboxAccepted, "time"> => ({
  type: "inbox/accepted",
  message: { id: Ids.AgentMessageId.make(id), content: [block.text(`queued ${id}`)], source: MessageSource.user },
  placement: "queued",
  wakeup: true
})

/** The `inbox/settled` record that withdraws it. */
export const settled = (id: string): Omit<Store.InboxSettled, "time"> => ({
  type: "inbox/settled",
  id: Ids.AgentMessageId.make(id),
  fate: "withdrawn"
})

const compaction = (
  turn: number,
  step: number,
  through: number,
  messages: number
): SessionEvent.SessionEventInput => ({
  type: "compaction",
  data: {
    turn,
    step,
    summary: `Summary at ${messages}`,
    through,
    messages,
    reason: "automatic",
    estimate: 10,
    model: "m"
  }
})

/** Appends one step's events (and inbox records) to `log`, the way the agent would write them. */
const write = (log: SessionLog.Service, step: Step, turn: number, extra: number) =>
  Effect.gen(function*() {
    switch (step._tag) {
      case "turn":
        yield* log.appendAll(turnKinds[step.kind]!(turn))
        return
      case "idle":
        yield* log.append(ev.user(`idle ${extra}`, MessageSource.plugin("p")))
        return
      case "edit": {
        yield* log.recordInbox([accepted(`held-${extra}`)])
        if (step.settle) yield* log.recordInbox([settled(`held-${extra}`)])
        return
      }
      case "compaction": {
        // What the agent's compaction step logs: the record counts every message folded before its step.
        if (step.manual) {
          yield* log.appendAll([ev.turnStart(turn, { kind: "compaction" }), ev.stepStart(turn, 1)])
          const [history, state] = [yield* log.history, yield* log.state]
          yield* log.appendAll([
            compaction(turn, 1, state.nextSeq - 2, history.length),
            ev.stepEnd(turn, 1),
            ev.turnEnd(turn)
          ])
          return
        }
        yield* log.appendAll([ev.user(`Long ${turn}`, MessageSource.user, `prompt-${turn}`), ev.turnStart(turn)])
        yield* log.append(ev.stepStart(turn, 1))
        const [history, state] = [yield* log.history, yield* log.state]
        yield* log.appendAll([
          compaction(turn, 1, state.nextSeq - 2, history.length),
          ev.stepEnd(turn, 1),
          ev.stepStart(turn, 2),
          ev.assistant(turn, 2, [block.text(`After the summary ${turn}`)]),
          ev.stepEnd(turn, 2),
          ev.turnEnd(turn)
        ])
        return
      }
      case "rollback": {
        // The running turn is rolled back after a tool step (R208): `from` where its own messages begin.
        yield* log.appendAll([
          ev.user(`Do ${turn}`, MessageSource.user, `prompt-${turn}`),
          ev.turnStart(turn),
          ev.stepStart(turn, 1),
          ev.assistant(turn, 1, [block.text("On it."), block.toolCall(`r${turn}`, "sh", "{}")]),
          ev.toolCall(turn, 1, `r${turn}`, "sh"),
          ev.toolResult(turn, 1, `r${turn}`, "sh", "done")
        ])
        const through = (yield* log.history).length
        yield* log.append({
          type: "turn/rollback",
          data: { turn, by: Ids.AgentMessageId.make(`instead-${turn}`), from: through - 2, through }
        })
        // A message the cut turn folds after the record is left out too, until its turn/end.
        if (step.late) yield* log.append(ev.steering(turn, `late ${turn}`, `late-${turn}`))
        yield* log.appendAll([ev.stepEnd(turn, 1), ev.turnEnd(turn, { kind: "aborted" })])
        return
      }
      case "resume":
        return
    }
  })

/** A new store instance on the place's data, in `scope`. */
const storeIn = <E>(layer: Layer.Layer<SessionStore, E>, scope: Scope.Scope) =>
  Effect.map(Layer.buildWithScope(layer, scope), (context) => Context.get(context, SessionStore))

const openOn = (store: Service, options?: SessionLog.OpenOptions) =>
  SessionLog.open(sid, options).pipe(Effect.provideService(SessionStore, store))

/** What the next request is built from: the derived messages, the rollback and compaction state, the header. */
const requestOf = (log: SessionLog.Service) =>
  Effect.gen(function*() {
    const [history, state] = [yield* log.history, yield* log.state]
    return {
      messages: History.messages(history),
      length: history.length,
      header: state.header,
      compaction: state.compaction,
      dropped: state.dropped?.ranges
    }
  })

/** The same store with snapshots hidden: `open` replays the whole log. */
const withoutSnapshots = (store: Service): Service => ({
  ...store,
  loadSnapshot: () => Effect.succeed(Option.none()),
  saveSnapshot: () => Effect.void
})

/** Saves a snapshot over the session's (nobody leases it then: every writing log of the run is closed). */
const saveAs = (store: Service, snapshot: { seq: number; position: number; head: string; body: string }) =>
  store.saveSnapshot(sid, snapshot)

/** The ways a saved snapshot is made stale, damaged or foreign; each must leave the requests as they were. */
const damages = (
  saved: { seq: number; position: number; head: string; body: string },
  earlier: { seq: number; position: number; head: string; body: string } | undefined
): ReadonlyArray<readonly [string, { seq: number; position: number; head: string; body: string }]> => {
  const head = JSON.parse(saved.head) as Record<string, unknown>
  return [
    ...(earlier === undefined ? [] : [["an earlier snapshot", earlier] as const]),
    ["a body of another length", { ...saved, body: `${saved.body} ` }],
    // Same length, so only the entries' reading can tell.
    ...(saved.body.length === 0 ? [] : [
      ["a body not in its version's form", { ...saved, body: "#".repeat(saved.body.length) }] as const,
      ["an entry of an unknown kind", { ...saved, body: `z${saved.body.slice(1)}` }] as const
    ]),
    ["a body without its messages", {
      ...saved,
      head: JSON.stringify({ ...head, bodyLength: 0 }),
      body: ""
    }],
    ["a head of an unknown version", { ...saved, head: JSON.stringify({ ...head, version: 99 }) }],
    ["a version-1 snapshot (head and body in one text)", {
      ...saved,
      head: `${JSON.stringify({ ...head, version: 1, bodyLength: undefined })}\n${saved.body}`
    }]
  ]
}

/**
 * Registers the property for one backend. `numRuns` defaults to 12 (each run writes and reopens a session several
 * times on the backend).
 */
export const historyResumeProperty = <E>(
  name: string,
  place: Effect.Effect<Layer.Layer<SessionStore, E>, E, Scope.Scope>,
  options?: { readonly numRuns?: number }
): void => {
  describe(`history snapshot property (${name})`, () => {
    it.live(
      "resumed from its snapshot, or from a stale, damaged or foreign one, a random session's next request is the full derivation's",
      () =>
        Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(stepArb, { minLength: 1, maxLength: 12 }),
              fc.integer({ min: 1, max: 40 }),
              fc.option(fc.record({ kind: fc.nat(5), cut: fc.nat(20) }), { nil: undefined }),
              (steps, every, crash) =>
                Effect.runPromise(Effect.scoped(Effect.gen(function*() {
                  const scope = yield* Effect.scope
                  const layer = yield* place
                  const store = yield* storeIn(layer, scope)
                  const commit = { snapshotEvery: every }
                  let log = yield* SessionLog.make({ id: sid, commit }).pipe(Effect.provideService(SessionStore, store))
                  let turn = 0
                  let extra = 0
                  let earlier: Option.Option<SnapshotHead> = Option.none()
                  for (const step of steps) {
                    if (step._tag === "resume") {
                      yield* log.close
                      if (Option.isNone(earlier)) earlier = yield* store.loadSnapshot(sid)
                      log = yield* openOn(store, { commit })
                      continue
                    }
                    if (step._tag !== "idle" && step._tag !== "edit") turn++
                    yield* write(log, step, turn, extra++)
                  }
                  if (crash !== undefined) {
                    // The log ends inside a turn: a resume repairs it (R106) before the history is read.
                    const inputs = turnKinds[crash.kind]!(++turn)
                    yield* log.appendAll(inputs.slice(0, 2 + (crash.cut % (inputs.length - 2))))
                  }
                  yield* log.close
                  const earlierBody = Option.isNone(earlier) ? Option.none() : yield* earlier.value.body
                  const earlierSaved = Option.isSome(earlier) && Option.isSome(earlierBody)
                    ? { ...earlier.value, body: earlierBody.value }
                    : undefined

                  // From the snapshot, on a fresh store instance (as a new process opens it): it repairs durably.
                  const resumed = yield* openOn(yield* storeIn(layer, scope), { commit: { snapshotEvery: 0 } })
                  const fromSnapshot = yield* requestOf(resumed)
                  const lastTurn = yield* resumed.lastTurn
                  yield* resumed.close
                  const replayed = yield* openOn(withoutSnapshots(yield* storeIn(layer, scope)), { readOnly: true })
                  const expected = yield* requestOf(replayed)
                  const all = yield* replayed.events
                  assert.deepStrictEqual(fromSnapshot, expected, "from the snapshot")
                  assert.deepStrictEqual(expected.messages, History.deriveMessages(all))
                  const start = all.findLastIndex((event) => event.type === "turn/start")
                  assert.deepStrictEqual(lastTurn, start < 0 ? [] : all.slice(start), "the last turn")

                  const head = yield* store.loadSnapshot(sid)
                  if (Option.isNone(head)) return
                  const body = yield* head.value.body
                  if (Option.isNone(body)) return
                  const saved = {
                    seq: head.value.seq,
                    position: head.value.position,
                    head: head.value.head,
                    body: body.value
                  }
                  for (const [what, damaged] of damages(saved, earlierSaved)) {
                    yield* saveAs(store, damaged)
                    const opened = yield* openOn(yield* storeIn(layer, scope), { readOnly: true })
                    assert.deepStrictEqual(yield* requestOf(opened), expected, what)
                  }
                  // The snapshot is a cache: without it, the same.
                  const bare = yield* openOn(withoutSnapshots(yield* storeIn(layer, scope)), { readOnly: true })
                  assert.deepStrictEqual(yield* requestOf(bare), expected, "no snapshot")
                })))
            ),
            { numRuns: options?.numRuns ?? 12 }
          )
        ),
      180_000
    )
  })
}
