/**
 * Harness: one `Agent.make` per bench agent, each in its own `Scope` (closing it disposes the agent), over a
 * scripted `LanguageModel` built with `LanguageModel.make` — the standard interface any provider goes through, so
 * the agent pays the same per-request `@effect/ai` work it pays with a real provider.
 *
 * Why not `@harness/testkit`'s `ScriptedModel`: its text pieces stream as one delta each (a 5-token reply would be
 * five text blocks and twice the chunk events of the peers' one block of five deltas), it cannot pace tokens, and
 * it records every request's `Prompt` for tests — a 10 000-turn session would retain every prompt ever sent and
 * charge that memory and time to the agent. The model lives here alone, so a cheaper model interface can replace
 * it without touching the workloads.
 *
 * Each call from a workload runs as one Effect program (`Effect.runPromise`), which is what an async JavaScript
 * caller of Harness pays.
 */
import { LanguageModel, type Prompt, type Response, Tool } from "@effect/ai"
import type { HttpClient } from "@effect/platform"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Agent, AgentTool } from "@harness/agent"
import { type AgentEvent, Message, ModelStream, type SessionEvent } from "@harness/domain"
import { ChatCompletions } from "@harness/llm"
import { Chunk, Context, Effect, Either, Exit, Fiber, Layer, Option, Queue, Schema, Scope, Stream } from "effect"
import type { AgentOptions, BenchAgent, BenchRuntime, Observed, Reply, Script, Transcript } from "../Runtime.js"
import { countReply, noopToolName, tally, textOf } from "../Runtime.js"
import { servedUrl, sseUrlEnv } from "../SseServer.js"
import { storeBench } from "./harnessStore.js"

const finish = (reason: Response.FinishReason, outputTokens: number): Response.StreamPartEncoded => ({
  type: "finish",
  reason,
  usage: { inputTokens: 0, outputTokens, totalTokens: outputTokens }
})

/** Waits for the script's `wait(k)` promise, if any; interrupting the request stops the wait. */
const waitFor = (reply: Reply, k: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    const waiting = reply.wait?.(k)
    return waiting === undefined ? Effect.void : Effect.promise(() => waiting)
  })

/**
 * One reply as the stream parts Harness's own provider emits (one text block of deltas, or one tool call), each
 * built by `part`: encoded for the `LanguageModel` interface, typed for the `ModelStream` one (built that way, not
 * mapped afterwards, so the fake model adds no stream stage of its own to the agent's cost). A text reply's parts
 * are its `text-start`, one delta per token, `text-end` and `finish`.
 */
const replyParts = <P>(
  reply: Reply,
  index: number,
  part: (encoded: Response.StreamPartEncoded) => P
): ReadonlyArray<P> => {
  if (reply._tag === "tool-call") {
    const id = `call-${index}`
    return [
      part({ type: "tool-params-start", id, name: reply.name }),
      part({ type: "tool-params-delta", id, delta: reply.arguments }),
      part({ type: "tool-params-end", id }),
      part({ type: "tool-call", id, name: reply.name, params: JSON.parse(reply.arguments) }),
      part(finish("tool-calls", 0))
    ]
  }
  const id = `text-${index}`
  return [
    part({ type: "text-start", id }),
    ...reply.tokens.map((delta) => part({ type: "text-delta", id, delta })),
    part({ type: "text-end", id }),
    part(finish("stop", reply.tokens.length))
  ]
}

/**
 * How a reply is chunked: all at once without waits; with waits, a tool call after its wait, a text's head, each
 * delta after its own wait, then the tail.
 */
const segmentsOf = <P>(
  reply: Reply,
  parts: ReadonlyArray<P>
): ReadonlyArray<{ readonly wait: number | undefined; readonly parts: ReadonlyArray<P> }> =>
  reply.wait === undefined
    ? [{ wait: undefined, parts }]
    : reply._tag === "tool-call"
    ? [{ wait: 0, parts }]
    : [
      { wait: undefined, parts: parts.slice(0, 1) },
      ...reply.tokens.map((_, k) => ({ wait: k, parts: parts.slice(k + 1, k + 2) })),
      { wait: undefined, parts: parts.slice(reply.tokens.length + 1) }
    ]

/** The reply as a `Stream`, one chunk per segment. */
const replyStream = <P>(reply: Reply, parts: ReadonlyArray<P>): Stream.Stream<P> => {
  const segments = segmentsOf(reply, parts)
  if (segments.length === 1 && segments[0]!.wait === undefined) return Stream.fromIterable(parts)
  return Stream.fromIterable(segments).pipe(
    Stream.mapConcatEffect((segment) =>
      segment.wait === undefined
        ? Effect.succeed(segment.parts)
        : Effect.as(waitFor(reply, segment.wait), segment.parts)
    )
  )
}

/**
 * The reply as a `ModelStream.Pull`: the same parts in the same chunks as `replyStream`, handed over without running
 * a `Stream` (ADR 0033).
 */
const replyPull = <P>(reply: Reply, parts: ReadonlyArray<P>): Effect.Effect<Chunk.Chunk<P>, Option.Option<never>> => {
  const segments = segmentsOf(reply, parts)
  let next = 0
  return Effect.suspend(() => {
    const segment = segments[next]
    if (segment === undefined) return Effect.fail(Option.none())
    next++
    const chunk = Chunk.unsafeFromArray(segment.parts)
    return segment.wait === undefined ? Effect.succeed(chunk) : Effect.as(waitFor(reply, segment.wait), chunk)
  })
}

const userTextsOf = (prompt: Prompt.Prompt): ReadonlyArray<string> =>
  prompt.content.flatMap((message) =>
    message.role === "user"
      ? [message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")]
      : []
  )

/**
 * Which model interface the agent gets (`BENCH_HARNESS_MODEL`, ADR 0057):
 *
 * - `provider` (default): Harness's chat-completions provider (`@harness/llm`, its `LanguageModel` and `ModelStream`)
 *   against the runner's loopback SSE server, for every agent whose script the server serves (`AgentOptions.served`:
 *   the instant script, or a paced reply on the server's paced route); other agents (replies that wait for the
 *   workload: W5, W8) get the same typed parts from the script, streamed (`stream`);
 * - `standard`: the same provider's `LanguageModel` only, so the agent goes through `LanguageModel.streamText` as with
 *   any other `@effect/ai` provider (a script's replies likewise, as encoded parts);
 * - `stream`: the scripted `ModelStream` without `pullText`, in process;
 * - `pull`: the scripted `ModelStream` with `pullText`, as a replayed or cached model can offer (ADR 0033).
 */
export type ModelInterface = "provider" | "standard" | "stream" | "pull"

const modelInterface = ((): ModelInterface => {
  const chosen = process.env["BENCH_HARNESS_MODEL"]
  return chosen === "standard" || chosen === "stream" || chosen === "pull" ? chosen : "provider"
})()

/**
 * The provider's services against the loopback server at `url`, over `http` (one undici client per process, as an
 * application shares one HTTP client between its models), built in `scope`.
 */
const providerContext = (url: string, http: Context.Context<HttpClient.HttpClient>, scope: Scope.Scope) =>
  Layer.buildWithScope(
    ChatCompletions.layer({ baseUrl: url, model: "bench" }).pipe(Layer.provide(Layer.succeedContext(http))),
    scope
  )

const typedOf = (part: Response.StreamPartEncoded): ModelStream.Part =>
  Either.getOrThrowWith(ModelStream.typed(part), (error) => new Error(`bench model built a bad part: ${error.message}`))

/**
 * A `LanguageModel` that answers each request from `script`, and its `ModelStream` (the same replies, typed
 * per request as a provider types what it builds).
 */
const scriptedModel = (script: Script): Effect.Effect<Context.Context<LanguageModel.LanguageModel>> =>
  Effect.suspend(() => {
    // The request counter is the fake model's own bookkeeping, kept out of Effect so the model costs the agent
    // nothing beyond what `LanguageModel.make` itself does.
    let requests = 0
    const reply = <P>(options: LanguageModel.ProviderOptions, part: (encoded: Response.StreamPartEncoded) => P) => {
      const index = requests++
      const next = script({ index, userTexts: () => userTextsOf(options.prompt) })
      return { reply: next, parts: replyParts(next, index, part) }
    }
    const streamOf = <P>(options: LanguageModel.ProviderOptions, part: (encoded: Response.StreamPartEncoded) => P) =>
      Stream.suspend(() => {
        const next = reply(options, part)
        return replyStream(next.reply, next.parts)
      })
    const streamText = (options: LanguageModel.ProviderOptions) =>
      streamOf(options, (encoded): Response.StreamPartEncoded => encoded)
    return Effect.map(
      LanguageModel.make({
        streamText,
        generateText: (options) => Effect.map(Stream.runCollect(streamText(options)), ModelStream.aggregate)
      }),
      (model) => {
        const context = Context.make(LanguageModel.LanguageModel, model)
        if (modelInterface === "standard") return context
        // `provider` falls back to the streamed path for a script the server does not serve.
        return Context.add(context, ModelStream.ModelStream, {
          model,
          streamText: (options) => streamOf(options, typedOf),
          pullText: modelInterface !== "pull" ? undefined : (options) =>
            Effect.sync(() => {
              const next = reply(options, typedOf)
              return replyPull(next.reply, next.parts)
            })
        })
      }
    )
  })

const noopTool = AgentTool.make(
  Tool.make(noopToolName, { description: "Does nothing.", success: Schema.String }),
  { handler: () => Effect.succeed("ok") }
)

const transcriptOf = (log: ReadonlyArray<SessionEvent.SessionEvent>): Transcript => {
  const t = tally()
  for (const event of log) {
    switch (event.type) {
      case "turn/end":
        if (event.data.reason.kind === "completed") t.completedTurns++
        if (event.data.reason.kind === "aborted") t.abortedTurns++
        break
      case "user/message":
        if (event.data.source.kind === "user") {
          t.prompts.push(textOf(event.data.content))
          t.userTexts.push(textOf(event.data.content))
        }
        break
      case "steering/message":
        t.steering.push(textOf(event.data.content))
        t.userTexts.push(textOf(event.data.content))
        break
      case "assistant/message":
        countReply(t, textOf(event.data.content))
        break
      case "tool/result":
        t.toolResults++
        break
    }
  }
  return { ...t, entries: log.length, types: log.map((event) => event.type) }
}

const observed = (event: AgentEvent.AgentEvent): Observed | undefined => {
  if (event.type === "agent/inbox/dequeue") return { _tag: "dequeued", text: textOf(event.message.content) }
  if (event.type === "session/event" && event.event.type === "turn/end") {
    return { _tag: "turn-ended", aborted: event.event.data.reason.kind === "aborted" }
  }
  return undefined
}

/**
 * Harness needs no process-wide boot: each agent is built in its own scope. `around` wraps every Effect program the
 * runtime runs (creation included), for instruments such as `steps.ts`'s interpreter-step counter.
 */
export const make = (
  around: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E> = (effect) => effect
): Promise<BenchRuntime> => {
  const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(around(effect))
  const url = process.env[sseUrlEnv]
  const runtimeScope = Effect.runSync(Scope.make())
  // The HTTP client is built once, and the provider once per route of the server (the instant script, a pace), as an
  // application builds its model layer once for all its agents.
  let http: Promise<Context.Context<HttpClient.HttpClient>> | undefined
  const providers = new Map<string, Promise<Context.Context<LanguageModel.LanguageModel | ModelStream.ModelStream>>>()
  const served = (which: AgentOptions["served"]): Effect.Effect<Context.Context<LanguageModel.LanguageModel>> => {
    const route = url === undefined ? undefined : servedUrl(url, which)
    if (route === undefined) {
      return Effect.dieMessage(`${sseUrlEnv} is not set: the worker starts the loopback server`)
    }
    let provider = providers.get(route)
    if (provider === undefined) {
      http ??= Effect.runPromise(Layer.buildWithScope(NodeHttpClient.layerUndici, runtimeScope))
      provider = http.then((context) => Effect.runPromise(providerContext(route, context, runtimeScope)))
      providers.set(route, provider)
    }
    const ready = provider
    return Effect.map(Effect.promise(() => ready), (context) =>
      modelInterface === "standard"
        ? Context.make(LanguageModel.LanguageModel, Context.get(context, LanguageModel.LanguageModel))
        : context)
  }
  const usesServer = (options: AgentOptions) =>
    options.served !== undefined && options.served !== false &&
    (modelInterface === "provider" || modelInterface === "standard")
  const createAgent = (options: AgentOptions): Promise<BenchAgent> =>
    run(Effect.gen(function*() {
      const scope = yield* Scope.make()
      const model = yield* (usesServer(options) ? served(options.served) : scriptedModel(options.script))
      const agent = yield* Agent.make({ tools: options.tools === true ? [noopTool] : [] }).pipe(
        Effect.provide(model),
        Scope.extend(scope)
      )
      return {
        followUp: (text) => run(Effect.asVoid(agent.followup(Message.make(text)))),
        followUpAll: (texts) =>
          run(Effect.forEach(texts, (text) => agent.followup(Message.make(text)), { discard: true })),
        steer: (text) => run(Effect.asVoid(agent.steer(Message.make(text)))),
        cancel: () => run(Effect.asVoid(agent.cancel("user"))),
        waitIdle: () => run(agent.whenIdle),
        transcript: () => run(Effect.map(agent.log, transcriptOf)),
        observe: (listener) =>
          run(Effect.gen(function*() {
            const child = yield* Scope.fork(scope, { _tag: "Sequential" })
            const queue = yield* Scope.extend(agent.subscribe, child)
            // Everything already published is taken at once, as `Stream.fromQueue` would; `Effect.forever` around a
            // single `Queue.take` would yield to the scheduler after every event and see each one a turn late.
            const reader = yield* Queue.takeBetween(queue, 1, Number.MAX_SAFE_INTEGER).pipe(
              Effect.map((events) => {
                for (const event of events) {
                  const seen = observed(event)
                  if (seen !== undefined) listener(seen)
                }
              }),
              Effect.forever,
              Effect.forkIn(child)
            )
            return () => {
              void run(Effect.andThen(Fiber.interrupt(reader), Scope.close(child, Exit.void)))
            }
          })),
        dispose: () => run(Scope.close(scope, Exit.void))
      } satisfies BenchAgent
    }))
  return Promise.resolve({
    name: "harness",
    version: `@harness/agent (this checkout; model interface: ${modelInterface})`,
    createAgent,
    store: storeBench((session, script, scope) =>
      Effect.gen(function*() {
        const model = yield* scriptedModel(script)
        const agent = yield* Agent.make({ session }).pipe(Effect.provide(model), Scope.extend(scope))
        return {
          followUp: (text: string) => Effect.asVoid(agent.followup(Message.make(text))),
          whenIdle: agent.whenIdle
        }
      })
    ),
    close: () => Effect.runPromise(Scope.close(runtimeScope, Exit.void))
  })
}
