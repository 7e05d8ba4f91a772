/**
 * The durable inbox's records in the log (ADR 0017): `recordInbox` rides with the next commit (write-through) or
 * the writer's next batch (write-behind), `flush` makes them durable, `open` gives back the pending inbox
 * (accepted, neither settled nor logged, in order), and `hasMessage` answers for every accepted id, written or not.
 */
import { assert, describe, it } from "@effect/vitest"
import { MessageSource, Store } from "@harness/domain"
import { block, ev, messageId, promptTurn, sessionId } from "@harness/testkit/Events"
import { Chunk, Effect, Schema, Stream } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"

const sid = sessionId("inbox-1")
const decodeRecord = Schema.decodeSync(Schema.parseJson(Store.InboxRecord))

const accepted = (id: string, placement: Store.InboxRecordPlacement = "queued", wakeup = true) =>
  ({
    type: "inbox/accepted",
    message: { id: messageId(id), content: [block.text(`text of ${id}`)], source: MessageSource.user },
    placement,
    wakeup
  }) as const

const settled = (id: string, fate: Store.InboxFate = "discarded") =>
  ({ type: "inbox/settled", id: messageId(id), fate }) as const

/** The stored records' types (inbox records by `type` and message id, events by `type`). */
const storedShape = (store: SessionStore.Service) =>
  store.load(sid).pipe(
    Stream.map((record) => {
      const value: { readonly type: string } = JSON.parse(record.text)
      if (value.type === "inbox/accepted" || value.type === "inbox/settled") {
        const inbox = decodeRecord(record.text)
        return `${inbox.type}:${
          inbox.type === "inbox/accepted" ? inbox.message.id : "id" in inbox ? inbox.id : inbox.callId
        }`
      }
      return value.type
    }),
    Stream.runCollect,
    Effect.map(Chunk.toReadonlyArray)
  )

const withStore = <A, E>(
  mode: SessionLog.CommitMode,
  f: (store: SessionStore.Service) => Effect.Effect<A, E, SessionStore.SessionStore>
) =>
  Effect.flatMap(SessionStore.makeMemory, (memory) => {
    const store: SessionStore.Service = { ...memory, commitMode: mode, volatile: false }
    return Effect.provideService(f(store), SessionStore.SessionStore, store)
  })

describe.each(["write-through", "write-behind"] as const)("SessionLog inbox records (%s)", (mode) => {
  it.effect("recorded records ride with the next commit, before its events; flush writes them when none follows", () =>
    withStore(mode, (store) =>
      Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: sid })
        assert.isTrue(log.durable)
        yield* log.recordInbox([accepted("a")])
        yield* log.appendAll(promptTurn(1, "a", "done"))
        yield* log.flush
        assert.deepStrictEqual((yield* storedShape(store)).slice(0, 2), ["inbox/accepted:a", "user/message"])
        yield* log.recordInbox([accepted("b", "queued", false), settled("b", "withdrawn")])
        yield* log.flush
        assert.deepStrictEqual((yield* storedShape(store)).slice(-2), ["inbox/accepted:b", "inbox/settled:b"])
        // The events are untouched by inbox records.
        assert.strictEqual((yield* log.events).length, promptTurn(1, "a", "done").length)
      })))

  it.effect("hasMessage answers for recorded, logged and stored ids, and no other", () =>
    withStore(mode, () =>
      Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: sid })
        yield* log.recordInbox([accepted("pending")])
        assert.isTrue(yield* log.hasMessage(messageId("pending")))
        yield* log.append(ev.user("logged", MessageSource.user, "logged"))
        assert.isTrue(yield* log.hasMessage(messageId("logged")))
        yield* log.flush
        assert.isTrue(yield* log.hasMessage(messageId("pending")))
        assert.isTrue(yield* log.hasMessage(messageId("logged")))
        assert.isFalse(yield* log.hasMessage(messageId("never")))
      })))

  it.effect("open gives back the accepted items neither settled nor logged, in acceptance order", () =>
    withStore(mode, () =>
      Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: sid })
        yield* log.recordInbox([accepted("p1"), accepted("s1", "steering"), accepted("c1", "context", false)])
        yield* log.recordInbox([accepted("q1", "queued", false), accepted("gone"), accepted("w1")])
        yield* log.recordInbox([settled("gone", "discarded"), settled("w1", "withdrawn")])
        // p1 is claimed: its turn logs it (the claim is derivable from the turn's `user/message`).
        yield* log.appendAll([
          ev.turnStart(1),
          ev.user("p1", MessageSource.user, "p1"),
          ev.turnEnd(1, { kind: "aborted" })
        ])
        yield* log.flush
        const reopened = yield* SessionLog.open(sid)
        assert.deepStrictEqual(
          reopened.pendingInbox.map((r) => [r.message.id, r.placement, r.wakeup]),
          [["s1", "steering", true], ["c1", "context", false], ["q1", "queued", false]]
        )
        assert.deepStrictEqual(reopened.pendingInbox[0]!.message.content, [block.text("text of s1")])
        assert.deepStrictEqual(log.pendingInbox, [])
      })))

  it.effect("an invalid record is refused with invalid-event and nothing is recorded", () =>
    withStore(mode, (store) =>
      Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: sid })
        const error = yield* Effect.flip(
          log.recordInbox([accepted("ok"), { type: "inbox/settled", id: messageId("x"), fate: "lost" as never }])
        )
        assert.strictEqual(error.reason, "invalid-event")
        assert.match(error.message, /inbox\/settled/)
        yield* log.flush
        assert.deepStrictEqual(yield* storedShape(store), [])
      })))
})

describe("SessionLog inbox records on the memory store", () => {
  it.effect("the memory log is not durable and costs no store round trip per record", () =>
    Effect.gen(function*() {
      const [store, faults] = yield* SessionStore.withFaults(yield* SessionStore.makeMemory)
      const log = yield* SessionLog.make({ id: sid }).pipe(Effect.provideService(SessionStore.SessionStore, store))
      assert.isFalse(log.durable)
      // Every append fails from now on: recording never touches the store.
      yield* faults.failNext(1_000)
      yield* log.recordInbox([accepted("a"), accepted("b")])
      yield* faults.clear
      yield* log.append(ev.user("x"))
      const shape = yield* store.load(sid).pipe(
        Stream.map((r) => JSON.parse(r.text).type as string),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      assert.deepStrictEqual(shape, ["inbox/accepted", "inbox/accepted", "user/message"])
    }))
})
