/**
 * The event stream's heartbeat over real HTTP, on a `TestClock`: a comment frame after every interval of virtual
 * time, none before it, and none when turned off.
 */
import { assert, describe, it } from "@effect/vitest"
import { Message } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Effect, Queue, TestClock } from "effect"
import { get } from "node:http"
import { serve } from "./support.js"

/** The chunks of an event stream as they arrive, read by hand (a comment is visible here; clients drop it). */
const chunks = (url: string) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<string>()
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        get(url, { headers: { authorization: "Bearer read-secret" } }, (response) => {
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => queue.unsafeOffer(chunk))
        })
      ),
      (request) => Effect.sync(() => request.destroy())
    )
    /** Reads chunks until one contains `text`; answers everything read. */
    const readUntil = (text: string) =>
      Effect.gen(function*() {
        let read = ""
        while (!read.includes(text)) read += yield* Queue.take(queue)
        return read
      })
    return readUntil
  })

describe("heartbeat", () => {
  it.scoped("a comment frame after each interval of Clock time, none before (R195)", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [], { heartbeat: "10 seconds" })
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      const readUntil = yield* chunks(`${server.baseUrl}/sessions/${id}/events`)
      yield* readUntil("event: ready")
      // Just short of the interval: an event sent now arrives with no heartbeat before it.
      yield* TestClock.adjust("9999 millis")
      yield* client.agent.inject({ path: { id }, payload: { message: Message.make("context") } })
      const before = yield* readUntil("\"type\":\"user/message\"")
      assert.notInclude(before, ": heartbeat")
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* readUntil(": heartbeat"), ": heartbeat\n\n")
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* readUntil(": heartbeat"), ": heartbeat\n\n")
    }))

  it.scoped("heartbeat: false sends none", () =>
    Effect.gen(function*() {
      const server = yield* serve(SessionStore.layerMemory, [], { heartbeat: false })
      const client = yield* server.client()
      const { id } = yield* client.sessions.create({ payload: {} })
      const readUntil = yield* chunks(`${server.baseUrl}/sessions/${id}/events`)
      yield* readUntil("event: ready")
      yield* TestClock.adjust("1 hour")
      yield* client.agent.inject({ path: { id }, payload: { message: Message.make("context") } })
      assert.notInclude(yield* readUntil("\"type\":\"user/message\""), ": heartbeat")
    }))
})
