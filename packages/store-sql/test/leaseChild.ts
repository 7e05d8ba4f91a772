/**
 * The child side of the cross-process writer-lease tests (ADR 0044): a real process that writes one session of a
 * store as its parent tells it — one JSON {@link Command} a line on stdin, one JSON {@link Reply} a line on stdout,
 * in order. Each backend's test directory has a two-line entry that calls {@link runChild} with its store layer.
 */
import { Ids, MessageSource, Store } from "@harness/domain"
import { SessionLog, type SessionLogError, type SessionStore } from "@harness/session"
import { ev, promptTurn } from "@harness/testkit/Events"
import { Effect, type Layer, Option, Schema, Stream } from "effect"
import * as readline from "node:readline"

/**
 * What the parent asks: `open` the session for writing; `prompt` (a user message and its `turn/start`, flushed);
 * `reply` (the rest of the open turn, flushed); `close` the log; `turn`, all four in a row.
 */
export const Command = Schema.Union(
  Schema.Struct({ op: Schema.Literal("open"), id: Schema.String }),
  Schema.Struct({ op: Schema.Literal("prompt"), marker: Schema.String }),
  Schema.Struct({ op: Schema.Literal("reply"), marker: Schema.String }),
  Schema.Struct({ op: Schema.Literal("close") }),
  Schema.Struct({ op: Schema.Literal("turn"), id: Schema.String, marker: Schema.String })
)
export type Command = typeof Command.Type

/** The child's answer to one command: done, or the log's refusal (`reason`, and the lease holder of a `busy`). */
export const Reply = Schema.Union(
  Schema.Struct({ ok: Schema.Literal(true) }),
  Schema.Struct({
    ok: Schema.Literal(false),
    reason: Schema.String,
    message: Schema.String,
    holder: Schema.optionalWith(Store.LeaseHolder, { exact: true })
  })
)
export type Reply = typeof Reply.Type

const decodeCommand = Schema.decodeUnknownSync(Schema.parseJson(Command))

const refused = (
  error: SessionLogError.SessionLogError | { readonly reason: string; readonly message: string }
): Reply => ({
  ok: false,
  reason: error.reason,
  message: error.message,
  ...("holder" in error && error.holder !== undefined ? { holder: error.holder } : {})
})

const ok: Reply = { ok: true }

/** The log the child writes, if it has one open. */
type Current = Option.Option<SessionLog.Service>

const prompt = (log: SessionLog.Service, marker: string) =>
  Effect.gen(function*() {
    const turn = (yield* log.state).lastTurn + 1
    yield* log.appendAll([ev.user(marker, MessageSource.user, marker), ev.turnStart(turn)])
    yield* log.flush
  })

const reply = (log: SessionLog.Service, marker: string) =>
  Effect.gen(function*() {
    const turn = (yield* log.state).openTurn
    if (turn === undefined) return yield* Effect.dieMessage("no open turn to reply in")
    yield* log.appendAll(promptTurn(turn, marker, marker).slice(2))
    yield* log.flush
  })

const withLog = (
  current: Current,
  use: (log: SessionLog.Service) => Effect.Effect<void, SessionLogError.SessionLogError>
) =>
  Option.match(current, {
    onNone: () => Effect.succeed([current, refused({ reason: "no-log", message: "no log is open" })] as const),
    onSome: (log) =>
      Effect.match(use(log), {
        onFailure: (error) => [current, refused(error)] as const,
        onSuccess: () => [current, ok] as const
      })
  })

const handle = (current: Current, command: Command) => {
  switch (command.op) {
    case "open":
      return Effect.match(SessionLog.open(Ids.SessionId.make(command.id)), {
        onFailure: (error) => [current, refused(error)] as const,
        onSuccess: (log) => [Option.some(log), ok] as const
      })
    case "prompt":
      return withLog(current, (log) => prompt(log, command.marker))
    case "reply":
      return withLog(current, (log) => reply(log, command.marker))
    case "close":
      return Effect.map(withLog(current, (log) => log.close), ([, answer]) => [Option.none(), answer] as const)
    case "turn":
      return Effect.match(
        Effect.flatMap(SessionLog.open(Ids.SessionId.make(command.id)), (log) =>
          Effect.ensuring(
            Effect.zipRight(Effect.zipRight(prompt(log, command.marker), reply(log, command.marker)), log.close),
            Effect.ignore(log.close)
          )),
        { onFailure: (error) => [current, refused(error)] as const, onSuccess: () => [current, ok] as const }
      )
  }
}

/**
 * Serves commands from stdin over a store built from `layer`, until stdin ends; then exits 0 (1 on a defect).
 * Every write goes through `SessionLog`, as the agent's does.
 */
export const runChild = <E>(layer: Layer.Layer<SessionStore.SessionStore, E>): void => {
  // The iterator is taken at once: readline drops the lines that arrive before it exists (while the layer builds).
  const iterator = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  const program = Stream.fromAsyncIterable({ [Symbol.asyncIterator]: () => iterator }, (e) => e).pipe(
    Stream.runFoldEffect(
      Option.none<SessionLog.Service>() as Current,
      (current, line) =>
        Effect.flatMap(
          handle(current, decodeCommand(line)),
          ([next, answer]) => Effect.as(Effect.sync(() => process.stdout.write(`${JSON.stringify(answer)}\n`)), next)
        )
    ),
    Effect.provide(layer)
  )
  Effect.runPromise(program).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`lease child failed: ${String(error)}\n`)
      process.exit(1)
    }
  )
}
