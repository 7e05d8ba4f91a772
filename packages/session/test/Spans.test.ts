/**
 * The log's spans (ADR 0024), exported through `@effect/opentelemetry` to an in-memory exporter: `SessionLog.flush`
 * (a durability barrier) and `SessionLog.commit` (one store write of the write-behind writer), and none per append.
 */
import { NodeSdk } from "@effect/opentelemetry"
import { assert, describe, it } from "@effect/vitest"
import { ev, promptTurn, sessionId, stamp } from "@harness/testkit/Events"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Schedule, TestClock } from "effect"
import * as SessionLog from "../src/SessionLog.js"
import * as SessionStore from "../src/SessionStore.js"

const sid = sessionId("spans-1")

/** Runs `program` with an OpenTelemetry tracer that exports to memory; returns what it returned and the spans. */
const traced = <A, E>(program: Effect.Effect<A, E>) =>
  Effect.suspend(() => {
    const exporter = new InMemorySpanExporter()
    const tracing = NodeSdk.layer(() => ({
      resource: { serviceName: "session-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
    // Read before the layer closes: shutting the exporter down clears it.
    return Effect.map(program, (a) => [a, exporter.getFinishedSpans()] as const).pipe(Effect.provide(tracing))
  })

const named = (spans: ReadonlyArray<ReadableSpan>, name: string) => spans.filter((span) => span.name === name)

const writeBehind = (store: SessionStore.Service, retry?: SessionLog.CommitOptions["retry"]) =>
  SessionLog.make({ id: sid, commit: retry === undefined ? { mode: "write-behind" } : { mode: "write-behind", retry } })
    .pipe(Effect.provideService(SessionStore.SessionStore, store))

describe("SessionLog spans", () => {
  it.effect("a flush is one span with the session and the seq it waits for; each store write is a commit span", () =>
    Effect.gen(function*() {
      const [, spans] = yield* traced(
        Effect.gen(function*() {
          const log = yield* writeBehind(yield* SessionStore.makeMemory)
          yield* log.appendAll(promptTurn(1, "Hi", "Hello")).pipe(Effect.withSpan("appender"))
          yield* log.flush.pipe(Effect.withSpan("caller"))
        })
      )
      const [appender] = named(spans, "appender")
      const [caller] = named(spans, "caller")
      const [flush, ...moreFlushes] = named(spans, "SessionLog.flush")
      assert.isDefined(appender)
      assert.isDefined(caller)
      assert.isDefined(flush)
      assert.strictEqual(moreFlushes.length, 0)
      assert.strictEqual(flush.parentSpanContext?.spanId, caller.spanContext().spanId)
      assert.deepStrictEqual(flush.attributes, { "harness.session.id": sid, "harness.log.seq": 8 })
      assert.strictEqual(flush.status.code, 1) // OK
      // The writer the append started had not run before the flush asked for a sync: one synced batch of eight,
      // its span a child of the append that started the writer.
      const commits = named(spans, "SessionLog.commit")
      assert.deepStrictEqual(commits.map((span) => span.attributes), [
        {
          "harness.session.id": sid,
          "harness.log.events": 8,
          "harness.log.first_seq": 0,
          "harness.log.inbox_records": 0,
          "harness.log.sync": true
        }
      ])
      assert.strictEqual(commits[0]!.parentSpanContext?.spanId, appender.spanContext().spanId)
      // Appends carry no span of their own (the hot path): nothing else was exported.
      assert.deepStrictEqual(spans.map((span) => span.name).sort(), [
        "SessionLog.commit",
        "SessionLog.flush",
        "SessionLog.make",
        "appender",
        "caller"
      ])
    }))

  it.effect("a commit retried over transient faults ends OK once written; one retrying cannot cure ends in error", () =>
    Effect.gen(function*() {
      const [, spans] = yield* traced(
        Effect.gen(function*() {
          const [faulty, faults] = yield* SessionStore.withFaults(yield* SessionStore.makeMemory)
          // The log's own lease, kept by the test so its intruder passes the fence (ADR 0044).
          const leases: Array<SessionStore.Lease> = []
          const store: SessionStore.Service = {
            ...faulty,
            lease: (id) => Effect.tap(faulty.lease(id), (lease) => Effect.sync(() => leases.push(lease)))
          }
          const log = yield* writeBehind(store, Schedule.spaced("1 second"))
          yield* faults.failNext(2)
          yield* log.append(ev.user("first"))
          const flushed = yield* Effect.fork(log.flush)
          yield* TestClock.adjust("2 seconds")
          yield* flushed.await
          // Another writer sneaks an event in behind the log's back: the next commit conflicts for good.
          yield* store.append(sid, { events: stamp([ev.user("intruder")], { start: 1 }), inbox: [] }, {
            lease: leases[0]!
          })
          yield* log.append(ev.user("mine"))
          const refused = yield* Effect.flip(log.flush)
          assert.strictEqual(refused.reason, "store")
        })
      )
      const commits = named(spans, "SessionLog.commit")
      const flushes = named(spans, "SessionLog.flush")
      // OK (the first after two retries), then the conflict: ERROR.
      assert.deepStrictEqual(commits.map((span) => span.status.code), [...commits.slice(1).map(() => 1), 2])
      assert.include(commits.at(-1)!.status.message, "event 0 of the commit has seq 1")
      assert.deepStrictEqual(flushes.map((span) => span.status.code), [1, 2])
      assert.include(flushes[1]!.status.message, "stopped writing")
    }))

  it.effect("over the memory store (write-through) appends export no log span", () =>
    Effect.gen(function*() {
      const [, spans] = yield* traced(
        Effect.gen(function*() {
          const log = yield* SessionLog.memory({ id: sid })
          yield* log.appendAll(promptTurn(1, "Hi", "Hello"))
          yield* log.append(ev.user("more"))
        })
      )
      assert.deepStrictEqual(spans.map((span) => span.name), ["SessionLog.make"])
    }))
})
