/**
 * The HTTP scenario runs at a small size and its checks hold: every latency sample saw its own message's dequeue,
 * every subscriber (in process and over the server's Server-Sent Events) received every durable event once, in seq
 * order, and both sides did the same work. The delivery check itself finds a gap, a duplicate and a missing event.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "../src/Http.js"

describe("HTTP scenario", { timeout: 60_000 }, () => {
  it.live("runs at a small size with every check passing; each figure is a positive number on both sides", () =>
    Effect.gen(function*() {
      const sizes = { samples: 5, turns: 20, subscribers: 10, fanoutTurns: 2 }
      const figures = yield* Http.run(sizes)
      assert.deepStrictEqual(figures.failures, [])
      // A turn of the scripted model logs at least turn/start, user/message, step/start, step/end, turn/end.
      assert.isAtLeast(figures.burstEvents, sizes.turns * 5)
      assert.isAtLeast(figures.fanoutEvents, sizes.fanoutTurns * 5)
      for (const side of [figures.inProcess, figures.http]) {
        for (const [name, value] of Object.entries(side)) {
          assert.isTrue(Number.isFinite(value) && (name.startsWith("fanoutBytes") || value > 0), `${name}: ${value}`)
        }
      }
      const table = Http.table(figures)
      assert.include(table, "| send → dequeue p50 (µs, 5 samples) |")
      assert.include(table, "heap per subscriber, 10 subscribers")
    }))

  it("the delivery check finds a gap, a duplicate and a missing event", () => {
    assert.deepStrictEqual(Http.checkSeqs("s", [3, 4, 5], 3, 3), [])
    assert.deepStrictEqual(Http.checkSeqs("s", [3, 5, 6], 3, 3), ["s: event 1 has seq 5, expected 4"])
    assert.deepStrictEqual(Http.checkSeqs("s", [3, 4, 4], 3, 3), ["s: event 2 has seq 4, expected 5"])
    assert.deepStrictEqual(Http.checkSeqs("s", [3, 4], 3, 3), ["s: 2 durable events, expected 3"])
  })
})
