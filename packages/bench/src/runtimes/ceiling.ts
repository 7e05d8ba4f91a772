/**
 * The shape's ceiling: the leanest implementation of Harness's fixed shape, measured with W1–W4 (ADR 0057, which
 * replaces ADR 0039's floor). Not a runtime anyone would use, and not a peer: Harness's shape with nothing of Harness
 * in it, built as cheaply as the shape allows —
 *
 * - the inbox of whole turns is a `Queue`, the window a `Ref` guarded by a `Semaphore` (one permit), every change
 *   of either made holding it; a free permit is taken in one synchronous step (`withPermitsIfAvailable`, as Harness
 *   takes its lock since ADR 0041), only a held one is waited for;
 * - every turn runs in a fiber of its own (so that a cancel could interrupt it); there is no driver fiber: the
 *   follow-up that finds the agent idle forks the first turn, and each turn, in the section that ends it (the one of
 *   its last `step/end`), claims the next and forks it, or marks the window idle and opens the `whenIdle` latch;
 * - every fact Harness logs for the same turns goes into an append-only log with the same type, in the same order
 *   (gap-free `seq`, `time` from `Clock`): the test in `test/ceiling.test.ts` compares the two logs entry by entry;
 *   every model request is the history folded from it, copied;
 * - each call is one `Effect.runPromise`, as the Harness adapter's calls are.
 *
 * Everything else Harness does is left out: no decoding or freezing of input, no validation of the log, no ids, no
 * live events, no steering, staging or cancel, no hooks, no `LanguageModel` or provider (the script's reply is one
 * array of parts, consumed in one go), no async boundary at the model request, no spans. It implements only what
 * W1–W4 drive (`followUp`, `followUpAll`, `waitIdle`, `transcript`, `dispose`, a no-op tool) and checks the same
 * things there, so a ceiling that skipped work would fail its checks rather than look fast.
 */
import { Clock, Effect, Option, Queue, Ref } from "effect"
import type { AgentOptions, BenchAgent, BenchRuntime, Reply, Script, Transcript } from "../Runtime.js"
import { countReply, noopToolName, tally } from "../Runtime.js"

type Entry =
  | { readonly type: "turn/start" | "step/start" | "step/end" | "turn/end" | "request/header" }
  | { readonly type: "user/message"; readonly text: string }
  | { readonly type: "assistant/chunk"; readonly part: Part }
  | { readonly type: "assistant/message"; readonly text: string; readonly call?: string | undefined }
  | { readonly type: "tool/call"; readonly name: string; readonly arguments: string }
  | { readonly type: "tool/result"; readonly output: string }

type Logged = Entry & { readonly seq: number; readonly time: number }

type Part =
  | { readonly type: "text-start" | "text-end" | "finish" | "tool-params-start" | "tool-params-end" }
  | { readonly type: "text-delta" | "tool-params-delta"; readonly delta: string }
  | { readonly type: "tool-call"; readonly name: string; readonly arguments: string }

/** A model-visible message, as the history folds it from the log. */
interface HistoryMessage {
  readonly role: "user" | "assistant" | "tool"
  readonly text: string
}

/** A reply's parts, as a chat-completions provider streams them (the same parts Harness's log records). */
const partsOf = (reply: Reply): ReadonlyArray<Part> =>
  reply._tag === "tool-call"
    ? [
      { type: "tool-params-start" },
      { type: "tool-params-delta", delta: reply.arguments },
      { type: "tool-params-end" },
      { type: "tool-call", name: reply.name, arguments: reply.arguments },
      { type: "finish" }
    ]
    : [
      { type: "text-start" },
      ...reply.tokens.map((delta): Part => ({ type: "text-delta", delta })),
      { type: "text-end" },
      { type: "finish" }
    ]

/** What a reply's parts come to: its text and the tool call it makes, if any. */
const assemble = (parts: ReadonlyArray<Part>) => {
  let text = ""
  let call: { readonly name: string; readonly arguments: string } | undefined
  for (const part of parts) {
    if (part.type === "text-delta") text += part.delta
    if (part.type === "tool-call") call = part
  }
  return { text, call }
}

const makeAgent = (script: Script, tools: boolean) =>
  Effect.map(Queue.unbounded<string>(), (inbox): BenchAgent => {
    const lock = Effect.unsafeMakeSemaphore(1)
    /** `effect` holding the lock: a free permit taken synchronously, a held one waited for. */
    const locked = <A>(effect: Effect.Effect<A>): Effect.Effect<A> =>
      Effect.flatMap(
        lock.withPermitsIfAvailable(1)(effect),
        Option.match({ onNone: () => lock.withPermits(1)(effect), onSome: Effect.succeed })
      )
    // The window: the latch of the running turn chain, `undefined` when idle.
    const window = Ref.unsafeMake<Effect.Latch | undefined>(undefined)
    const log: Array<Logged> = []
    const history: Array<HistoryMessage> = []
    let requests = 0

    const append = (entries: ReadonlyArray<Entry>): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (time) =>
        Effect.sync(() => {
          for (const entry of entries) {
            log.push({ ...entry, seq: log.length + 1, time })
            if (entry.type === "user/message") history.push({ role: "user", text: entry.text })
            if (entry.type === "assistant/message") history.push({ role: "assistant", text: entry.text })
            if (entry.type === "tool/result") history.push({ role: "tool", text: entry.output })
          }
        }))

    /** Claims the next turn and forks it, or marks the window idle and opens its latch (holding the lock). */
    const next: Effect.Effect<void> = Effect.flatMap(Queue.poll(inbox), (claimed) =>
      Option.isSome(claimed)
        ? startTurn(claimed.value)
        : Effect.flatMap(Ref.getAndSet(window, undefined), (latch) => Effect.sync(() => latch?.unsafeOpen())))

    /**
     * One step: the request from the history, the reply's chunks and message, the tool's result. A step without a
     * tool call ends its turn in the section of its `step/end`, as Harness's does (ADR 0041), and claims the next
     * turn there too; a tool step is followed by the next step.
     */
    const step: Effect.Effect<void> = Effect.suspend(() => {
      const messages = history.slice()
      const index = requests++
      const parts = partsOf(script({ index, userTexts: () => messages.map((m) => m.text) }))
      const { call, text } = assemble(parts)
      const reply: Array<Entry> = index === 0 ? [{ type: "request/header" }] : []
      for (const part of parts) reply.push({ type: "assistant/chunk", part })
      reply.push({ type: "assistant/message", text, call: call?.name })
      if (call === undefined) {
        return locked(Effect.zipRight(append([...reply, { type: "step/end" }, { type: "turn/end" }]), next))
      }
      if (!tools || call.name !== noopToolName) return Effect.die(new Error(`the ceiling has no tool ${call.name}`))
      reply.push({ type: "tool/call", name: call.name, arguments: call.arguments })
      return Effect.zipRight(
        locked(append(reply)),
        Effect.flatMap(Effect.succeed("ok"), (output) =>
          Effect.zipRight(
            locked(append([{ type: "tool/result", output }, { type: "step/end" }, { type: "step/start" }])),
            step
          ))
      )
    })

    /** Forks the turn of `text` (holding the lock): its first section is written in that fiber. */
    const startTurn = (text: string): Effect.Effect<void> =>
      Effect.asVoid(Effect.forkDaemon(Effect.zipRight(
        locked(append([{ type: "turn/start" }, { type: "user/message", text }, { type: "step/start" }])),
        step
      )))

    const followUp = (text: string): Effect.Effect<void> =>
      locked(Effect.flatMap(Ref.get(window), (running) =>
        running !== undefined
          ? Queue.offer(inbox, text)
          : Effect.zipRight(Ref.set(window, Effect.unsafeMakeLatch(false)), startTurn(text))))
    const whenIdle = Effect.flatMap(Ref.get(window), (latch) => (latch === undefined ? Effect.void : latch.await))

    const transcript = (): Transcript => {
      const t = tally()
      for (const entry of log) {
        if (entry.type === "turn/end") t.completedTurns++
        if (entry.type === "user/message") {
          t.prompts.push(entry.text)
          t.userTexts.push(entry.text)
        }
        if (entry.type === "assistant/message") countReply(t, entry.text)
        if (entry.type === "tool/result") t.toolResults++
      }
      return { ...t, entries: log.length, types: log.map((entry) => entry.type) }
    }
    const unsupported = (what: string) => () => Promise.reject(new Error(`the shape's ceiling has no ${what}`))
    return {
      followUp: (text) => Effect.runPromise(followUp(text)),
      followUpAll: (texts) => Effect.runPromise(Effect.forEach(texts, followUp, { discard: true })),
      steer: unsupported("steering"),
      cancel: unsupported("cancel"),
      waitIdle: () => Effect.runPromise(whenIdle),
      transcript: () => Promise.resolve(transcript()),
      observe: unsupported("live events"),
      dispose: () => Effect.runPromise(Effect.zipRight(whenIdle, Queue.shutdown(inbox)))
    }
  })

/** The ceiling needs no boot. */
export const make = (): Promise<BenchRuntime> =>
  Promise.resolve({
    name: "ceiling",
    version: "Harness's fixed shape, leanest (this checkout's effect)",
    createAgent: (options: AgentOptions) => Effect.runPromise(makeAgent(options.script, options.tools === true)),
    close: () => Promise.resolve()
  })
