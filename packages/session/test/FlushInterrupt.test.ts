/**
 * A write-through log's flush interrupted while its store write is in flight (a cancel reaching the agent's
 * dispatch barrier): the contract says interrupting a flush abandons the wait, never the writes. The inbox records
 * the write carried are then written, so the log's bookkeeping must say so: they are never written a second time,
 * and a reopened session restores each accepted message once.
 */
import { assert, describe, it } from "@effect/vitest"
import { MessageSource } from "@harness/domain"
import { block, ev, messageId, sessionId } from "@harness/testkit/Events"
import { Chunk, Deferred, Effect, Fiber, Stream } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"

const sid = sessionId("flush-interrupt")

const accepted = (id: string) =>
  ({
    type: "inbox/accepted",
    message: { id: messageId(id), content: [block.text(`text of ${id}`)], source: MessageSource.user },
    placement: "queued",
    wakeup: true
  }) as const

/** The stored records' types, inbox records with their message id. */
const storedShape = (store: SessionStore.Service) =>
  store.load(sid).pipe(
    Stream.map((record) => {
      const value: { readonly type: string; readonly message?: { readonly id: string } } = JSON.parse(record.text)
      return value.type === "inbox/accepted" ? `${value.type}:${value.message!.id}` : value.type
    }),
    Stream.runCollect,
    Effect.map(Chunk.toReadonlyArray)
  )

describe("SessionLog flush (write-through) interrupted during its store write", () => {
  it.effect("the records it wrote are written once, and reopening restores each message once", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      // The sync commit is written, then the store is still busy (its fsync, say) when the cancel lands.
      const written = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const store: SessionStore.Service = {
        ...memory,
        commitMode: "write-through",
        volatile: false,
        append: (id, commit, options) =>
          options?.sync === true && commit.events.length === 0
            ? memory.append(id, commit, options).pipe(
              Effect.zipRight(Deferred.succeed(written, undefined)),
              Effect.zipRight(Deferred.await(finish))
            )
            : memory.append(id, commit, options)
      }
      yield* Effect.gen(function*() {
        const log = yield* SessionLog.make({ id: sid })
        yield* log.recordInbox([accepted("a")])
        const flushing = yield* Effect.fork(log.flush)
        yield* Deferred.await(written)
        // The interruption is delivered while the write is in flight; the write then completes.
        const interrupting = yield* Effect.fork(Fiber.interrupt(flushing))
        yield* Deferred.succeed(finish, undefined)
        yield* Fiber.join(interrupting)
        // The next commit carries only what was not written yet.
        yield* log.append(ev.user("b", MessageSource.user, "b"))
        yield* log.flush
        assert.deepStrictEqual(yield* storedShape(store), ["inbox/accepted:a", "user/message"])
        const reopened = yield* SessionLog.open(sid)
        assert.deepStrictEqual(reopened.pendingInbox.map((r) => r.message.id), [messageId("a")])
      }).pipe(Effect.provideService(SessionStore.SessionStore, store))
    }))
})
