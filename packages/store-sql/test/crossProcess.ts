/**
 * The cross-process writer-lease suite (ADR 0044, R107), shared by the SQL backends: real child processes
 * (`leaseChild.ts`, run by Node through `tsx`) write one session of a store while the test process reads, forks,
 * opens and kills. Each backend registers it with a fresh store location per test and the path of its child entry:
 *
 * ```ts
 * crossProcess("sqlite", { child, fresh })
 * ```
 *
 * Every step waits for the child's reply to the command before it goes on, so the interleavings are the ones
 * written here, on a loaded machine too; only the free rounds of the race leave the order to the processes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, type SessionEvent } from "@harness/domain"
import { LogCheck, SessionLog, Sessions, SessionStore } from "@harness/session"
import { Context, Deferred, type Duration, Effect, Either, Layer, Queue, Schema, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as os from "node:os"
import * as readline from "node:readline"
import { type Command, Reply } from "./leaseChild.js"

/** A backend under test: how to make a fresh store location, and the child entry that serves commands on it. */
export interface Backend {
  /** The child entry (a `.ts` file calling `runChild`); it gets `args` of the location as its arguments. */
  readonly child: string
  /**
   * A fresh, empty store location (dropped with the scope): the child's arguments, and the test process's layer on
   * it with the given lease time.
   */
  readonly fresh: Effect.Effect<
    {
      readonly args: ReadonlyArray<string>
      readonly layer: (
        leaseTime?: Duration.DurationInput
      ) => Layer.Layer<SessionStore.SessionStore, SessionStore.SessionStoreError>
    },
    never,
    Scope.Scope
  >
}

/** A running child: its pid, `send` (one command, its reply), and `kill` (SIGKILL, resolved once it exited). */
interface Child {
  readonly pid: number
  readonly send: (command: Command) => Effect.Effect<Reply>
  readonly kill: Effect.Effect<void>
}

const decodeReply = (line: string): Reply =>
  Either.getOrElse(
    Schema.decodeUnknownEither(Schema.parseJson(Reply))(line),
    (): Reply => ({ ok: false, reason: "garbled", message: line })
  )

/** Starts a child on `backend` with `args`; it is ended (stdin closed, then awaited) when the scope closes. */
const spawnChild = (entry: string, args: ReadonlyArray<string>): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.gen(function*() {
    const replies = yield* Queue.unbounded<Reply>()
    const exited = yield* Deferred.make<void>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const process_ = spawn(process.execPath, ["--import", "tsx", entry, ...args], {
          stdio: ["pipe", "pipe", "inherit"]
        })
        readline.createInterface({ input: process_.stdout }).on("line", (line) => {
          Queue.unsafeOffer(replies, decodeReply(line))
        })
        process_.once("exit", (code, signal) => {
          Queue.unsafeOffer(replies, { ok: false, reason: "exited", message: `exited: ${code ?? signal}` })
          Deferred.unsafeDone(exited, Effect.void)
        })
        return process_
      }),
      (process_) =>
        Effect.zipRight(
          Effect.sync(() => process_.stdin.end()),
          Deferred.await(exited)
        )
    )
    return {
      pid: child.pid ?? -1,
      send: (command) =>
        Effect.zipRight(Effect.sync(() => child.stdin.write(`${JSON.stringify(command)}\n`)), Queue.take(replies)),
      kill: Effect.zipRight(Effect.sync(() => child.kill("SIGKILL")), Deferred.await(exited))
    }
  })

/** Asserts a reply is a success. */
const assertOk = (reply: Reply, what: string): void => {
  if (!reply.ok) assert.fail(`${what}: ${reply.reason}: ${reply.message}`)
}

/** Asserts a reply is `busy` naming `holder` (a process on this host). */
const assertBusy = (reply: Reply, holder: number, what: string): void => {
  if (reply.ok) return assert.fail(`${what}: expected busy, got ok`)
  assert.strictEqual(reply.reason, "busy", `${what}: ${reply.message}`)
  assert.strictEqual(reply.holder?.pid, holder, `${what}: the holder is named`)
  assert.strictEqual(reply.holder?.host, os.hostname(), what)
  assert.include(reply.message, `process ${holder} on host`, what)
}

/** The user messages' texts of a log, in order. */
const prompts = (events: ReadonlyArray<SessionEvent.SessionEvent>): Array<string> =>
  events.flatMap((e) =>
    e.type === "user/message" ? e.data.content.flatMap((part) => part.type === "text" ? [part.text] : []) : []
  )

/** Reads a session without writing (`sessions show`). */
const readEvents = (id: Ids.SessionId) => Effect.flatMap(SessionLog.open(id, { readOnly: true }), (log) => log.events)

/**
 * Registers the suite. `rounds`: rounds of the race (half of them held: one child opens, the other must be
 * refused; half free: both run a whole turn at once).
 */
export const crossProcess = (name: string, backend: Backend, rounds = 200): void => {
  /** A store location with a stored session `id`, the test process's store on it, and two children. */
  const setup = (id: Ids.SessionId, leaseTime?: Duration.DurationInput) =>
    Effect.gen(function*() {
      const { args, layer } = yield* backend.fresh
      const context = yield* Layer.build(layer(leaseTime))
      const store = Context.get(context, SessionStore.SessionStore)
      yield* Effect.flatMap(SessionLog.make({ id }), (log) => log.close).pipe(
        Effect.provideService(SessionStore.SessionStore, store)
      )
      const [a, b] = yield* Effect.all([spawnChild(backend.child, args), spawnChild(backend.child, args)], {
        concurrency: 2
      })
      return { store, a, b }
    })

  describe(`writer lease across processes (${name})`, () => {
    it.live(
      `two writers race ${rounds} rounds on one session: every acknowledged turn is stored, every loser is told who holds it`,
      () =>
        Effect.gen(function*() {
          const id = Ids.SessionId.make("race")
          const { a, b, store } = yield* setup(id)
          const acknowledged: Array<string> = []
          let refusals = 0
          for (let round = 0; round < rounds; round++) {
            if (round % 2 === 0) {
              // Held: the child that opens first keeps the lease until its turn is written; the other is refused.
              const [ra, rb] = yield* Effect.all([a.send({ op: "open", id }), b.send({ op: "open", id })], {
                concurrency: 2
              })
              assert.isTrue(ra.ok !== rb.ok, `round ${round}: exactly one opens (${JSON.stringify([ra, rb])})`)
              const [winner, loser, refusal] = ra.ok ? [a, b, rb] : [b, a, ra]
              assertBusy(refusal, winner.pid, `round ${round}`)
              refusals++
              const marker = `held ${round} by ${winner.pid} (${loser.pid} refused)`
              assertOk(yield* winner.send({ op: "prompt", marker }), `round ${round} prompt`)
              assertOk(yield* winner.send({ op: "reply", marker }), `round ${round} reply`)
              assertOk(yield* winner.send({ op: "close" }), `round ${round} close`)
              acknowledged.push(marker)
            } else {
              // Free: both open, write a whole turn and close at once; a loser is refused at its open.
              const markers = [`free ${round} a`, `free ${round} b`]
              const replies = yield* Effect.all([
                a.send({ op: "turn", id, marker: markers[0]! }),
                b.send({ op: "turn", id, marker: markers[1]! })
              ], { concurrency: 2 })
              replies.forEach((reply, i) => {
                if (reply.ok) acknowledged.push(markers[i]!)
                else {
                  assertBusy(reply, (i === 0 ? b : a).pid, `round ${round} ${i === 0 ? "a" : "b"}`)
                  refusals++
                }
              })
            }
          }
          const events = yield* readEvents(id).pipe(Effect.provideService(SessionStore.SessionStore, store))
          const stored = prompts(events)
          // 0 lost, none twice, none that was refused: exactly the acknowledged turns, in the order they were written.
          assert.deepStrictEqual([...stored].sort(), [...acknowledged].sort())
          assert.deepStrictEqual(LogCheck.checkLog(events), [])
          assert.isAtLeast(refusals, rounds / 2)
        }).pipe(Effect.scoped),
      600_000
    )

    it.live(
      "a read-only open and a fork beside a live writer: the writer completes and its turn is stored",
      () =>
        Effect.gen(function*() {
          const id = Ids.SessionId.make("live")
          const { a, store } = yield* setup(id)
          const provide = Effect.provideService(SessionStore.SessionStore, store)
          assertOk(yield* a.send({ op: "turn", id, marker: "first" }), "first turn")
          assertOk(yield* a.send({ op: "open", id }), "open")
          assertOk(yield* a.send({ op: "prompt", marker: "live" }), "prompt")
          // beside the open turn: show, fork, list — and a second writer, refused naming the child
          const shown = yield* provide(readEvents(id))
          assert.deepStrictEqual(prompts(shown), ["first", "live"])
          const forked = yield* provide(Sessions.fork(id))
          assert.deepStrictEqual(prompts(yield* provide(readEvents(forked))), ["first"])
          const second = yield* provide(Effect.flip(SessionLog.open(id)))
          assert.strictEqual(second.reason, "busy")
          assert.strictEqual(second.holder?.pid, a.pid)
          assert.deepStrictEqual((yield* provide(Sessions.list)).length, 2)
          assertOk(yield* a.send({ op: "reply", marker: "live" }), "reply")
          assertOk(yield* a.send({ op: "close" }), "close")
          const events = yield* provide(readEvents(id))
          assert.deepStrictEqual(prompts(events), ["first", "live"])
          assert.strictEqual(events[events.length - 1]!.type, "turn/end")
          assert.deepStrictEqual(LogCheck.checkLog(events), [])
        }).pipe(Effect.scoped),
      120_000
    )

    it.live(
      "SIGKILL of the lease holder: the next writer takes over at once and repair closes the open turn",
      () =>
        Effect.gen(function*() {
          const id = Ids.SessionId.make("killed")
          // A lease time far beyond the test: the takeover comes from the holder being gone, not from expiry.
          const { a, b, store } = yield* setup(id, "1 hour")
          const provide = Effect.provideService(SessionStore.SessionStore, store)
          assertOk(yield* a.send({ op: "open", id }), "open")
          assertOk(yield* a.send({ op: "prompt", marker: "interrupted" }), "prompt")
          assertBusy(yield* b.send({ op: "open", id }), a.pid, "while the holder lives")
          yield* a.kill
          // another process takes it over …
          assertOk(yield* b.send({ op: "open", id }), "the other child, after the kill")
          assertOk(yield* b.send({ op: "close" }), "close")
          // … and so does this one; the open turn was closed by the first repair
          const log = yield* provide(SessionLog.open(id))
          const events = yield* log.events
          yield* log.close
          assert.deepStrictEqual(prompts(events), ["interrupted"])
          const last = events[events.length - 1]!
          assert.strictEqual(last.type, "turn/end")
          assert.deepStrictEqual(last.type === "turn/end" ? last.data.reason : undefined, { kind: "interrupted" })
          assert.deepStrictEqual(LogCheck.checkLog(events), [])
        }).pipe(Effect.scoped),
      120_000
    )
  })
}
