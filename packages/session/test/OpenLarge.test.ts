/**
 * Opening a session whose backend loads its records in big chunks (the JSONL store hands back thousands of records
 * per chunk): the scan must not recurse per record (W7 overflowed the stack in `Stream.runFold` at 20 000 events).
 */
import { assert, describe, it } from "@effect/vitest"
import { MessageSource } from "@harness/domain"
import { ev, sessionId } from "@harness/testkit/Events"
import { Effect, Stream } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"

const sid = sessionId("large-1")

describe("SessionLog.open on a large session", () => {
  it.effect(
    "scans 12 000 records loaded as one chunk without overflowing the stack, keeping the inbox",
    () =>
      Effect.gen(function*() {
        const memory = yield* SessionStore.makeMemory
        // One chunk for the whole session, as a file backend that reads a big block would hand it back.
        const store: SessionStore.Service = {
          ...memory,
          load: (id, options) => Stream.rechunk(memory.load(id, options), 100_000)
        }
        const count = 12_000
        yield* Effect.gen(function*() {
          const log = yield* SessionLog.make({ id: sid })
          const inputs = Array.from({ length: count }, (_, i) => ev.user(`message ${i}`, MessageSource.user, `m${i}`))
          for (let i = 0; i < count; i += 5_000) yield* log.appendAll(inputs.slice(i, i + 5_000))
          yield* log.recordInbox([{
            type: "inbox/accepted",
            message: {
              id: ev.user("x", MessageSource.user, "pending").data.messageId!,
              content: ev.user("later").data.content,
              source: MessageSource.user
            },
            placement: "queued",
            wakeup: false
          }])
          yield* log.flush
        }).pipe(Effect.provideService(SessionStore.SessionStore, store))
        const reopened = yield* SessionLog.open(sid).pipe(Effect.provideService(SessionStore.SessionStore, store))
        assert.strictEqual((yield* reopened.events).length, count)
        assert.deepStrictEqual(reopened.pendingInbox.map((r) => r.message.id), ["pending"])
      }),
    { timeout: 120_000 }
  )
})
