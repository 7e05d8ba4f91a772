/**
 * The crash-test child: opens or creates a session on a file store (SQLite or JSONL), runs an agent with a scripted
 * model and tools that take time through a {@link Scenario}, and reports over stdout (NDJSON, see `Protocol`)
 * what it observed: the ids its sends returned, the commits the store acknowledged, discards and claims. At the
 * chosen kill point it announces itself and stops the whole process (a blocking wait on the main thread), so the
 * parent's `SIGKILL` lands exactly there.
 *
 * @since 0.0.0
 */
import { LanguageModel, Tool } from "@effect/ai"
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Statement from "@effect/sql/Statement"
import { Agent, AgentTool } from "@harness/agent"
import { Ids, Message } from "@harness/domain"
import { SessionLog, SessionStore } from "@harness/session"
import { JsonlStore } from "@harness/store-jsonl"
import { SqliteStore } from "@harness/store-sqlite"
import { ScriptedModel } from "@harness/testkit"
import { Effect, Layer, Ref, Schema, Stream } from "effect"
import * as fs from "node:fs"
import type { ChildConfig, Line } from "./Protocol.js"
import { encodeLine } from "./Protocol.js"
import type { Census, KillKind, ReplyPlan } from "./Scenario.js"
import * as Scenario from "./Scenario.js"

/**
 * Writes one report line synchronously (so it reaches the pipe before anything that follows, a kill included).
 *
 * @since 0.0.0
 * @category reporting
 */
export const report = (line: Line): Effect.Effect<void> =>
  Effect.sync(() => {
    fs.writeSync(1, `${encodeLine(line)}\n`)
  })

/** Blocks the main thread for good: the process does nothing more until it is killed. */
const freeze = Effect.sync(() => {
  const cell = new Int32Array(new SharedArrayBuffer(4))
  for (;;) Atomics.wait(cell, 0, 0)
})

const emptyCensus: Census = {
  "append-before": 0,
  "append-after": 0,
  "torn-write": 0,
  stream: 0,
  tool: 0,
  sent: 0,
  cancel: 0
}

/**
 * The kill switch: counts each kill kind and stops the process at the configured point.
 *
 * @since 0.0.0
 * @category models
 */
interface KillSwitch {
  /** Counts one occurrence of `kind`; stops here if it is the kill point. */
  readonly hit: (kind: KillKind) => Effect.Effect<void>
  /** Whether the write in progress is to be torn (set by the store wrapper for the chosen append). */
  readonly tearing: Effect.Effect<boolean>
  /** Announces the kill point and stops (used by the write hooks once they tore the write). */
  readonly stop: (kind: KillKind) => Effect.Effect<void>
  readonly census: Effect.Effect<Census>
}

const makeKillSwitch = (config: ChildConfig): Effect.Effect<KillSwitch> =>
  Effect.gen(function*() {
    const counts = yield* Ref.make(emptyCensus)
    // After the chosen cancel: how many store appends may still go through before the stop.
    const cancelCountdown = yield* Ref.make<number | undefined>(undefined)
    const tear = yield* Ref.make(false)
    const kill = config.kill
    const stop = (kind: KillKind) =>
      Effect.flatMap(Ref.get(counts), (c) => report({ _tag: "kill-point", kind, n: c[kind] })).pipe(
        Effect.zipRight(freeze)
      )
    const hit = (kind: KillKind) =>
      Effect.gen(function*() {
        const counted = yield* Ref.updateAndGet(counts, (c) => ({ ...c, [kind]: c[kind] + 1 }))
        if (kind === "append-before") {
          const left = yield* Ref.get(cancelCountdown)
          if (left !== undefined) {
            if (left === 0) return yield* stop("cancel")
            yield* Ref.set(cancelCountdown, left - 1)
          }
        }
        if (kill === undefined) return
        if (kill.kind === "torn-write" && kind === "append-before" && counted["append-before"] === kill.n) {
          yield* Ref.update(counts, (c) => ({ ...c, "torn-write": kill.n }))
          return yield* Ref.set(tear, true)
        }
        if (kill.kind !== kind || counted[kind] !== kill.n) return
        if (kind === "cancel" && (kill.after ?? 0) > 0) return yield* Ref.set(cancelCountdown, (kill.after ?? 0) - 1)
        return yield* stop(kind)
      })
    return {
      hit,
      tearing: Ref.get(tear),
      stop,
      census: Effect.map(Ref.get(counts), (c) => ({ ...c, "torn-write": c["append-before"] }))
    }
  })

/**
 * Wraps the store: counts appends for the kill switch and reports every acknowledged commit as durable.
 */
const observedStore = (store: SessionStore.Service, kill: KillSwitch): SessionStore.Service => ({
  ...store,
  append: (id, commit, options) =>
    Effect.gen(function*() {
      yield* kill.hit("append-before")
      yield* store.append(id, commit, options)
      yield* report({ _tag: "durable", events: commit.events.map((event) => JSON.stringify(event)) })
      yield* kill.hit("append-after")
    })
})

/**
 * A `FileSystem` whose file writes, while the kill switch is tearing, write half of their bytes and stop: a real
 * torn write for the JSONL store.
 */
const tearingFileSystem = (kill: KillSwitch) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (base): FileSystem.FileSystem => ({
      ...base,
      open: (path, options) =>
        Effect.map(base.open(path, options), (file): FileSystem.File => {
          const writeAll = (buffer: Uint8Array) =>
            Effect.flatMap(kill.tearing, (tearing) =>
              tearing
                ? Effect.zipRight(
                  file.writeAll(buffer.subarray(0, Math.max(1, Math.floor(buffer.length / 2)))),
                  kill.stop("torn-write")
                )
                : file.writeAll(buffer))
          // Every other member is the platform file's own, bound to it (it keeps its position in a field).
          return new Proxy(file, {
            get: (target, key) => {
              if (key === "writeAll") return writeAll
              const value: unknown = Reflect.get(target, key, target)
              return typeof value === "function" ? value.bind(target) : value
            }
          })
        })
    }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

/**
 * The SQLite store, with a statement hook that stops inside the torn append's transaction: after the statement
 * that updates the session row, before the records are inserted.
 */
const sqliteStore = (filename: string) =>
  Layer.effect(
    SessionStore.SessionStore,
    Effect.zipRight(
      Effect.flatMap(SqliteClient.SqliteClient, (sql) => sql`PRAGMA synchronous = NORMAL`),
      SqliteStore.make()
    )
  ).pipe(
    Layer.provide(SqliteClient.layer({ filename })),
    Layer.orDie
  )

const sqliteTransformer = (kill: KillSwitch): Statement.Statement.Transformer => (statement) =>
  Effect.flatMap(kill.tearing, (tearing) => {
    if (!tearing) return Effect.succeed(statement)
    const [text] = statement.compile()
    return /^\s*INSERT INTO records/i.test(text)
      ? Effect.as(kill.stop("torn-write"), statement)
      : Effect.succeed(statement)
  })

const storeLayer = (config: ChildConfig, kill: KillSwitch): Layer.Layer<SessionStore.SessionStore> =>
  config.backend === "sqlite"
    ? sqliteStore(config.location)
    : JsonlStore.layer({ directory: config.location }).pipe(Layer.provide(tearingFileSystem(kill)))

const work = (kill: KillSwitch) =>
  AgentTool.make(
    Tool.make("work", {
      description: "Works for a while",
      parameters: { millis: Schema.Number },
      success: Schema.String
    }),
    {
      handler: ({ millis }) =>
        Effect.zipRight(kill.hit("tool"), Effect.as(Effect.sleep(millis), `worked ${millis} ms`)),
      parallel: true
    }
  )

const replyOf = (plan: ReplyPlan): ScriptedModel.Reply => {
  const pieces: Array<ScriptedModel.Piece> = []
  if (plan.reasoning !== undefined) pieces.push(ScriptedModel.reasoning(plan.reasoning))
  for (const text of plan.texts) pieces.push(ScriptedModel.text(text))
  for (const tool of plan.tools) pieces.push(ScriptedModel.toolCall("work", { millis: tool.millis }))
  return ScriptedModel.delayed(plan.delayMillis, ScriptedModel.reply(...pieces))
}

/** The scripted model, with every stream part counted by the kill switch. */
const countedModel = (replies: ReadonlyArray<ReplyPlan>, kill: KillSwitch) =>
  Effect.map(ScriptedModel.make(replies.map(replyOf)), ([model]): LanguageModel.Service => ({
    ...model,
    streamText: (options) => Stream.tap(model.streamText(options), () => kill.hit("stream"))
  }))

/**
 * The child's whole run: set up, run the scenario, report. Never fails: a failure is reported as a `failed` line.
 *
 * @since 0.0.0
 * @category running
 */
export const run = (config: ChildConfig): Effect.Effect<void> =>
  Effect.gen(function*() {
    const kill = yield* makeKillSwitch(config)
    const scenario = Scenario.make(config.seed, config.round)
    const program = Effect.gen(function*() {
      const store = observedStore(yield* SessionStore.SessionStore, kill)
      const sessionId = Ids.SessionId.make(config.sessionId)
      // Sessions of even seeds take a snapshot at (almost) every turn/end, so kills land around snapshot writes and a
      // resume and the verifier open from one (ADR 0022); the others keep the default (full replays).
      const commit = { snapshotEvery: config.seed % 2 === 0 ? 5 : undefined }
      const log = yield* (config.mode === "create"
        ? SessionLog.make({ id: sessionId, commit })
        : SessionLog.open(sessionId, { commit }))
        .pipe(Effect.provideService(SessionStore.SessionStore, store))
      const model = yield* countedModel(scenario.replies, kill)
      const agent = yield* Agent.make({ session: log, model: "scripted", provider: "crashtest", tools: [work(kill)] })
        .pipe(Effect.provideService(LanguageModel.LanguageModel, model))
      const live = yield* agent.subscribe
      yield* live.take.pipe(
        Effect.flatMap((event) =>
          event.type === "agent/inbox/discard"
            ? report({ _tag: "discarded", ids: event.messages.map((m) => m.id) })
            : event.type === "agent/inbox/dequeue"
            ? report({ _tag: "claimed", id: event.message.id })
            : Effect.void
        ),
        Effect.forever,
        Effect.forkScoped
      )
      const state = yield* log.state
      yield* report({ _tag: "ready", turns: state.lastTurn, events: state.nextSeq })
      for (const op of config.ops ?? scenario.ops) {
        switch (op._tag) {
          case "send":
          case "resend": {
            const id = Ids.AgentMessageId.make(op.id)
            const data = op.preset === "inject"
              ? Message.make(op.text, { kind: "plugin", plugin: "crashtest" })
              : Message.make(op.text)
            const returned = op.preset === "park"
              ? yield* agent.send(data, { target: "next-turn", wakeup: false, id })
              : yield* agent[op.preset](data, { id })
            yield* report({ _tag: "sent", requested: op.id, id: returned, op: `${op._tag}:${op.preset}` })
            yield* kill.hit("sent")
            break
          }
          case "cancel":
            yield* agent.cancel("user", { keepInbox: op.keepInbox })
            yield* kill.hit("cancel")
            break
          case "pause":
            yield* Effect.sleep(op.millis)
            break
          case "idle":
            // A barrier, as a client would place one: what the idle agent logged is durable afterwards.
            yield* agent.whenIdle
            yield* log.flush
            break
        }
      }
      yield* agent.whenIdle
      yield* log.flush
    })
    const layer = storeLayer(config, kill)
    yield* Effect.scoped(program).pipe(
      Effect.provide(layer),
      Statement.withTransformer(sqliteTransformer(kill)),
      Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => "the scenario did not finish in 60 s" }),
      Effect.matchCauseEffect({
        onFailure: (cause) => report({ _tag: "failed", message: String(cause) }),
        onSuccess: () => Effect.flatMap(kill.census, (census) => report({ _tag: "done", census }))
      })
    )
  })
