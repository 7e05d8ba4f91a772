/**
 * A writer in a process of its own, for the cross-process lease tests (`Writers.test.ts`): run with
 * `node --import tsx test/writer-child.ts <directory> <session> <name>`. It reads one JSON command per line on stdin
 * and answers each with one JSON line on stdout:
 *
 * - `{"op":"round","round":k,"pause":boolean}`: opens the session for writing, appends one whole turn whose prompt
 *   has the message id `<name>-<k>`, flushes, closes; answers `{"round":k,"ok":true}` once the turn is durable, or
 *   `{"round":k,"ok":false,"reason":…,"holder":…,"message":…}`. With `pause`, it answers `{"round":k,"opened":true}`
 *   once the session is open (holding its lease) and waits for `{"op":"continue"}` before it writes.
 * - `{"op":"hold"}`: opens the session, appends a prompt and the start of a turn, flushes, and answers
 *   `{"held":true}`, holding the lease with the turn open (to be killed, or finished by `{"op":"finish"}`, which
 *   appends the rest of the turn, flushes, closes and answers `{"finished":true}`).
 * - `{"op":"exit"}`: exits.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { MessageSource } from "@harness/domain"
import { SessionLog } from "@harness/session"
import { ev, promptTurn, sessionId } from "@harness/testkit/Events"
import { Effect, Layer, Queue } from "effect"
import * as fs from "node:fs"
import * as readline from "node:readline"
import { JsonlStore } from "../src/index.js"

const [directory, session, name] = process.argv.slice(2)
if (directory === undefined || session === undefined || name === undefined) {
  throw new Error("usage: writer-child.ts <directory> <session> <name>")
}
const id = sessionId(session)

const say = (line: unknown) => Effect.sync(() => fs.writeSync(1, `${JSON.stringify(line)}\n`))

/** A whole turn `turn` whose prompt has the message id `messageId`. */
const turnOf = (turn: number, messageId: string) => [
  ev.user(`Prompt ${messageId}`, MessageSource.user, messageId),
  ...promptTurn(turn, "", `Answer ${messageId}`).slice(1)
]

const program = Effect.gen(function*() {
  const commands = yield* Queue.unbounded<{ readonly op: string; readonly round?: number; readonly pause?: boolean }>()
  const lines = readline.createInterface({ input: process.stdin })
  lines.on("line", (line) => Queue.unsafeOffer(commands, JSON.parse(line)))
  lines.on("close", () => Queue.unsafeOffer(commands, { op: "exit" }))
  yield* say({ ready: true, pid: process.pid })
  for (;;) {
    const command = yield* Queue.take(commands)
    if (command.op === "exit") return
    if (command.op === "round") {
      const round = command.round ?? 0
      const result = yield* Effect.gen(function*() {
        const log = yield* SessionLog.open(id)
        if (command.pause === true) {
          yield* say({ round, opened: true })
          while ((yield* Queue.take(commands)).op !== "continue") {
            // only `continue` goes on
          }
        }
        const state = yield* log.state
        yield* log.appendAll(turnOf(state.lastTurn + 1, `${name}-${round}`))
        yield* log.flush
        yield* log.close
        return { round, ok: true }
      }).pipe(
        Effect.catchAll((e) =>
          Effect.succeed({ round, ok: false, reason: e.reason, holder: e.holder ?? null, message: e.message })
        )
      )
      yield* say(result)
    }
    if (command.op === "hold") {
      const log = yield* SessionLog.open(id)
      const state = yield* log.state
      const turn = state.lastTurn + 1
      const inputs = turnOf(turn, `${name}-held`)
      yield* log.appendAll(inputs.slice(0, 4))
      yield* log.flush
      yield* say({ held: true, turn })
      while ((yield* Queue.take(commands)).op !== "finish") {
        // only `finish` goes on
      }
      const finished = yield* Effect.gen(function*() {
        yield* log.appendAll(inputs.slice(4))
        yield* log.flush
        yield* log.close
        return { finished: true }
      }).pipe(
        Effect.catchAll((e) =>
          Effect.succeed({ finished: false, reason: e.reason, holder: e.holder ?? null, message: e.message })
        )
      )
      yield* say(finished)
    }
  }
}).pipe(
  Effect.provide(JsonlStore.layer({ directory }).pipe(Layer.provide(NodeFileSystem.layer))),
  Effect.catchAllCause((cause) => say({ failed: String(cause) }))
)

Effect.runPromise(program).then(() => process.exit(0), () => process.exit(1))
