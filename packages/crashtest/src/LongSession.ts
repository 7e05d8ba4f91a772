/**
 * The long-session child (R223, ADR 0060): one process runs a session of many turns against the
 * CLI's offline model with a small context window, on a file store, so automatic compactions happen again and
 * again; along the way a goal is created and worked to completion, and a second one is created and paused. It
 * continues whatever the store holds (a run killed earlier), reports each id a send returned, writes the size of
 * every model request to a side file before the request is answered, and at its kill point announces itself and
 * blocks until the parent's `SIGKILL`.
 *
 * @since 0.0.0
 */
import { LanguageModel, type Prompt, type Response, Tokenizer } from "@effect/ai"
import { NodeContext } from "@effect/platform-node"
import * as OfflineModel from "@harness/cli/OfflineModel"
import { Ids, Message, ModelStream } from "@harness/domain"
import { Goals } from "@harness/goal"
import { SessionLog, SessionStore } from "@harness/session"
import { Effect, Layer, Ref, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Stores from "./Stores.js"

/**
 * Where a run may be killed: while the n-th ordinary model request of the run is in flight, while the n-th
 * compaction summary request is, or just before the n-th store append reaches the store.
 *
 * @since 0.0.0
 * @category models
 */
export const KillKind = Schema.Literal("request", "summary", "append")

/**
 * @since 0.0.0
 * @category models
 */
export type KillKind = typeof KillKind.Type

/**
 * One child's configuration (passed as JSON in `argv[2]`).
 *
 * @since 0.0.0
 * @category models
 */
export const Config = Schema.Struct({
  backend: Schema.Literal("sqlite", "jsonl"),
  /** The run's directory: the store and the side file of request sizes live there. */
  directory: Schema.String,
  /** The session's length in ordinary (human) turns. */
  turns: Schema.Int,
  /** The model's context window, in the offline provider's tokens (words). */
  window: Schema.Int,
  threshold: Schema.Number,
  /** Whether the provider gives the agent a `Tokenizer` (else the agent's byte heuristic applies). */
  tokenizer: Schema.Boolean,
  seed: Schema.Int,
  kill: Schema.optional(Schema.Struct({ kind: KillKind, n: Schema.Int }))
})

/**
 * @since 0.0.0
 * @category models
 */
export type Config = typeof Config.Type

/**
 * One line of the side file: a model request's size in the provider's tokens, as the provider counted it when the
 * request reached it.
 *
 * @since 0.0.0
 * @category models
 */
export interface RequestSize {
  readonly kind: "step" | "summary"
  readonly tokens: number
  readonly messages: number
}

/**
 * The session every run continues.
 *
 * @since 0.0.0
 * @category constants
 */
export const sessionId = Ids.SessionId.make("long-session")

/**
 * The side file of request sizes in a run's directory.
 *
 * @since 0.0.0
 * @category constants
 */
export const requestsFile = (directory: string): string => path.join(directory, "requests.ndjson")

/**
 * The two goals of the session: the first is created a fifth of the way in and worked until complete; the second
 * is created three fifths in and paused at once, and stays paused to the end.
 *
 * @since 0.0.0
 * @category constants
 */
export const goals = {
  first: {
    objective: "Keep the numbered notes of this session in order",
    at: (turns: number) => Math.floor(turns / 5)
  },
  second: { objective: "Check the notes again later", at: (turns: number) => Math.floor((turns * 3) / 5) }
} as const

/** The system prompt of every request. */
const system = "You are a careful note keeper. Answer every note briefly."

const filler = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]

/**
 * The text of note `i`: a numbered note with 0–29 filler words chosen from the seed, so turns grow the history
 * unevenly.
 *
 * @since 0.0.0
 * @category constructors
 */
const noteText = (seed: number, i: number): string => {
  const words = ((seed * 7919 + i * 104_729) >>> 0) % 30
  const body = Array.from({ length: words }, (_, k) => filler[(i + k) % filler.length]!).join(" ")
  return `Note ${i} of the session: please acknowledge it. ${body}`.trim()
}

/**
 * The message id of note `i` (a resend after a restart asks for the same id).
 *
 * @since 0.0.0
 * @category constructors
 */
export const noteId = (i: number): Ids.AgentMessageId => Ids.AgentMessageId.make(`note-${i}`)

const wordsIn = (text: string): number => {
  let n = 0
  let inWord = false
  for (let i = 0; i < text.length; i++) {
    const space = /\s/.test(text[i]!)
    if (!space && !inWord) n++
    inWord = !space
  }
  return n
}

/**
 * The offline provider's token count of a prompt: the words of every system text, text, reasoning, tool call
 * (name and arguments) and tool result. Its usage reports and its `Tokenizer` both count this way.
 *
 * @since 0.0.0
 * @category utils
 */
const tokensOf = (prompt: Prompt.Prompt): number => {
  let n = 0
  for (const message of prompt.content) {
    if (message.role === "system") {
      n += wordsIn(message.content)
      continue
    }
    for (const part of message.content) {
      if (part.type === "text" || part.type === "reasoning") n += wordsIn(part.text)
      else if (part.type === "tool-call") n += wordsIn(`${part.name} ${JSON.stringify(part.params) ?? ""}`)
      else if (part.type === "tool-result") {
        n += wordsIn(`${part.name} ${typeof part.result === "string" ? part.result : JSON.stringify(part.result)}`)
      }
    }
  }
  return n
}

/**
 * The offline provider's `Tokenizer`: one token per word ({@link tokensOf}).
 *
 * @since 0.0.0
 * @category layers
 */
const tokenizer: Tokenizer.Service = Tokenizer.make({
  tokenize: (prompt) => Effect.sync(() => Array.from({ length: tokensOf(prompt) }, (_, i) => i))
})

/** Writes one line to stdout synchronously (so it reaches the pipe before a kill). */
const say = (line: string) => Effect.sync(() => fs.writeSync(1, `${line}\n`))

/** Blocks the only thread for good: the process does nothing more until it is killed. */
const freeze = Effect.sync(() => {
  const cell = new Int32Array(new SharedArrayBuffer(4))
  for (;;) Atomics.wait(cell, 0, 0)
})

/** Counts the kill kinds and stops at the configured point. */
const makeKillSwitch = (config: Config) =>
  Effect.map(
    Ref.make({ request: 0, summary: 0, append: 0 }),
    (counts) => (kind: KillKind) =>
      Effect.flatMap(Ref.updateAndGet(counts, (c) => ({ ...c, [kind]: c[kind] + 1 })), (c) =>
        config.kill !== undefined && config.kill.kind === kind && config.kill.n === c[kind]
          ? Effect.zipRight(say(`KILL ${kind} ${c[kind]}`), freeze)
          : Effect.void)
  )

/**
 * The offline model (its decisions, `OfflineModel.reply`) behind a provider that counts its tokens in words: each
 * request is measured and written to the side file first, then the kill switch may stop the process with the
 * request in flight, then the reply streams at once with usage in words.
 */
const provider = (
  kind: "step" | "summary",
  file: string,
  hit: (kind: KillKind) => Effect.Effect<void>
): Effect.Effect<LanguageModel.Service> => {
  const streamText = (options: LanguageModel.ProviderOptions): Stream.Stream<Response.StreamPartEncoded> =>
    Stream.unwrap(Effect.gen(function*() {
      const input = tokensOf(options.prompt)
      const size: RequestSize = { kind, tokens: input, messages: options.prompt.content.length }
      yield* Effect.sync(() => fs.appendFileSync(file, `${JSON.stringify(size)}\n`))
      yield* hit(kind === "step" ? "request" : "summary")
      const parts: Array<Response.StreamPartEncoded> = []
      let output = 0
      let calls = false
      OfflineModel.reply(options).forEach((piece, i) => {
        const id = `long-${options.prompt.content.length}-${i}`
        if (piece._tag === "tool-call") {
          calls = true
          output += wordsIn(JSON.stringify(piece.params))
          parts.push({ type: "tool-call", id, name: piece.name, params: piece.params })
          return
        }
        output += wordsIn(piece.text)
        parts.push({ type: `${piece._tag}-start`, id })
        parts.push({ type: `${piece._tag}-delta`, id, delta: piece.text })
        parts.push({ type: `${piece._tag}-end`, id })
      })
      parts.push({
        type: "finish",
        reason: calls ? "tool-calls" : "stop",
        usage: { inputTokens: input, outputTokens: output, totalTokens: input + output }
      })
      return Stream.fromIterable(parts)
    }))
  return LanguageModel.make({
    streamText,
    generateText: (request) => Effect.map(Stream.runCollect(streamText(request)), ModelStream.aggregate)
  })
}

/** The store, with every append counted by the kill switch before it reaches the store. */
const countedStore = (store: SessionStore.Service, hit: (kind: KillKind) => Effect.Effect<void>) => ({
  ...store,
  append: (...args: Parameters<SessionStore.Service["append"]>) => Effect.zipRight(hit("append"), store.append(...args))
})

/**
 * The child's whole run: continue the session to `turns` notes, then print `DONE`. A failure is printed as
 * `FAILED <cause>` (and the process exits 1).
 *
 * @since 0.0.0
 * @category running
 */
export const run = (config: Config): Effect.Effect<void> => {
  const program = Effect.gen(function*() {
    const hit = yield* makeKillSwitch(config)
    const store = countedStore(yield* SessionStore.SessionStore, hit)
    const exists = (yield* Effect.either(store.header(sessionId)))._tag === "Right"
    const log = yield* (exists ? SessionLog.open(sessionId) : SessionLog.make({ id: sessionId })).pipe(
      Effect.provideService(SessionStore.SessionStore, store)
    )
    const file = requestsFile(config.directory)
    const model = yield* provider("step", file, hit)
    const summarizer = yield* provider("summary", file, hit)
    const built = Goals.makeAgent({
      session: log,
      model: "offline",
      provider: "offline",
      system,
      compaction: {
        contextWindow: config.window,
        threshold: config.threshold,
        model: summarizer,
        modelLabel: "offline"
      }
    }, { defaultMaxGoalRounds: 20 }).pipe(Effect.provideService(LanguageModel.LanguageModel, model))
    const { agent, goals: service } = yield* (config.tokenizer
      ? Effect.provideService(built, Tokenizer.Tokenizer, tokenizer)
      : built)
    // The notes the log holds: the next one to send is the first missing (a resend of an id accepted before the
    // kill returns that id and delivers nothing twice).
    const events = yield* log.events
    let next = events.filter((e) =>
      e.type === "user/message" && e.data.messageId !== undefined && e.data.messageId.startsWith("note-")
    ).length
    yield* say(`READY ${next}`)
    const steer = Effect.gen(function*() {
      const view = yield* service.get
      const goal = view.goal
      if (goal === undefined && next >= goals.first.at(config.turns) && view.usedIds.length === 0) {
        yield* service.create({ objective: goals.first.objective })
      } else if (goal?.objective === goals.first.objective && goal.phase === "active" && view.activation !== "armed") {
        // A goal read back from the log is disarmed until a human resumes it (R119): the child is that human.
        yield* service.resume(goal)
      } else if (
        goal?.objective === goals.first.objective && goal.phase === "complete" && next >= goals.second.at(config.turns)
      ) {
        const second = yield* service.create({ objective: goals.second.objective })
        yield* service.pause(second)
      } else if (goal?.objective === goals.second.objective && goal.phase === "active") {
        yield* service.pause(goal)
      } else {
        return
      }
      yield* service.settled
    })
    for (; next < config.turns; next++) {
      yield* steer
      const id = yield* agent.followup(Message.make(noteText(config.seed, next)), { id: noteId(next) })
      yield* say(`SENT ${id}`)
      yield* agent.whenIdle
      yield* service.settled
    }
    yield* steer
    yield* agent.whenIdle
    yield* log.flush
    yield* log.close
    yield* say("DONE")
  })
  return Effect.scoped(program).pipe(
    Effect.provide(
      Layer.merge(Stores.layer(config.backend, Stores.locationIn(config.backend, config.directory)), NodeContext.layer)
    ),
    Effect.catchAllCause((cause) =>
      Effect.zipRight(say(`FAILED ${JSON.stringify(String(cause))}`), Effect.sync(() => process.exit(1)))
    )
  )
}
