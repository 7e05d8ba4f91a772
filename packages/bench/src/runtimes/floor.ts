/**
 * The shape floor: the least an agent built to Harness's fixed shape can cost, measured with W1–W4 (ADR 0039). Not
 * a runtime anyone would use, and not a peer: it is Harness's shape with nothing of Harness in it —
 *
 * - the inbox of whole turns is a `Queue`, the window a `Ref` guarded by a `Semaphore` (one permit), every change
 *   of either made holding it;
 * - a driver fiber exists while there is work and runs each turn in a fiber of its own (so that a cancel could
 *   interrupt it), waiting for it with `Fiber.await`; `whenIdle` waits on a latch the driver opens when it stops;
 * - every fact goes into an append-only log (gap-free `seq`, `time` from `Clock`), and every model request is the
 *   history folded from it, copied;
 * - each call is one `Effect.runPromise`, as the Harness adapter's calls are.
 *
 * Everything else Harness does is left out: no decoding or freezing of input, no validation of the log, no ids, no
 * live events, no inbox records, no steering, staging or cancel, no hooks, no `LanguageModel` (the script's reply is
 * one array of parts, consumed in one go), no async boundary at the model request, no spans. It implements only what
 * W1–W4 drive (`followUp`, `followUpAll`, `waitIdle`, `transcript`, `dispose`, a no-op tool) and checks the same
 * things there, so a floor that skipped work would fail its checks rather than look fast.
 */
import { Clock, Effect, Fiber, Option, Queue, Ref } from "effect"
import type { AgentOptions, BenchAgent, BenchRuntime, Reply, Script, Transcript } from "../Runtime.js"
import { noopToolName, tally } from "../Runtime.js"

type Entry =
  | { readonly type: "turn/start" | "step/start" | "step/end" | "turn/end" }
  | { readonly type: "user/message"; readonly text: string }
  | { readonly type: "assistant/chunk"; readonly part: Part }
  | { readonly type: "assistant/message"; readonly text: string; readonly call?: string | undefined }
  | { readonly type: "tool/result"; readonly output: string }

type Logged = Entry & { readonly seq: number; readonly time: number }

type Part =
  | { readonly type: "text-start" | "text-end" | "finish" }
  | { readonly type: "text-delta"; readonly delta: string }
  | { readonly type: "tool-call"; readonly name: string; readonly arguments: string }

/** A model-visible message, as the history folds it from the log. */
interface HistoryMessage {
  readonly role: "user" | "assistant" | "tool"
  readonly text: string
}

const partsOf = (reply: Reply): ReadonlyArray<Part> =>
  reply._tag === "tool-call"
    ? [{ type: "tool-call", name: reply.name, arguments: reply.arguments }, { type: "finish" }]
    : [
      { type: "text-start" },
      ...reply.tokens.map((delta): Part => ({ type: "text-delta", delta })),
      { type: "text-end" },
      { type: "finish" }
    ]

/** What a reply's parts come to: its text and the tool it calls, if any. */
const assemble = (parts: ReadonlyArray<Part>): { readonly text: string; readonly call: string | undefined } => {
  let text = ""
  let call: string | undefined
  for (const part of parts) {
    if (part.type === "text-delta") text += part.delta
    if (part.type === "tool-call") call = part.name
  }
  return { text, call }
}

const makeAgent = (script: Script, tools: boolean) =>
  Effect.map(Queue.unbounded<string>(), (inbox): BenchAgent => {
    const lock = Effect.unsafeMakeSemaphore(1)
    const locked = lock.withPermits(1)
    // The window: whether a driver runs, and the latch it opens when it stops.
    const window = Ref.unsafeMake<{ readonly idle: Effect.Latch | undefined }>({ idle: undefined })
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

    /** One step: the request from the history, the reply's chunks and message, the tool's result; whether it ended. */
    const step: Effect.Effect<boolean> = Effect.suspend(() => {
      const messages = history.slice()
      const parts = partsOf(script({ index: requests++, userTexts: () => messages.map((m) => m.text) }))
      const { call, text } = assemble(parts)
      const reply: Array<Entry> = parts.map((part) => ({ type: "assistant/chunk", part }))
      reply.push({ type: "assistant/message", text, call })
      if (call === undefined) {
        return Effect.as(locked(append([...reply, { type: "step/end" }, { type: "turn/end" }])), true)
      }
      if (!tools || call !== noopToolName) return Effect.die(new Error(`the floor has no tool ${call}`))
      return Effect.as(
        Effect.zipRight(
          locked(append(reply)),
          Effect.flatMap(Effect.succeed("ok"), (output) =>
            locked(append([{ type: "tool/result", output }, { type: "step/end" }, { type: "step/start" }])))
        ),
        false
      )
    })
    const steps: Effect.Effect<void> = Effect.flatMap(step, (ended) =>
      ended ? Effect.void : steps)
    const turn = (text: string): Effect.Effect<void> =>
      Effect.zipRight(
        locked(append([{ type: "turn/start" }, { type: "user/message", text }, { type: "step/start" }])),
        steps
      )

    // Claims the next turn, or stops the driver (opening its latch) when there is none, holding the lock.
    const next: Effect.Effect<Option.Option<string>> = locked(Effect.flatMap(Queue.poll(inbox), (claimed) =>
      Option.isSome(claimed) ? Effect.succeed<Option.Option<string>>(claimed) : Effect.flatMap(
        Ref.getAndSet(window, { idle: undefined }),
        (stopped) =>
          Effect.as(
            Effect.sync(() =>
              stopped.idle?.unsafeOpen()
            ),
            claimed
          )
      )))
    const driver: Effect.Effect<void> = Effect.flatMap(next, (claimed) =>
      Option.isNone(claimed)
        ? Effect.void
        : Effect.zipRight(Effect.flatMap(Effect.fork(turn(claimed.value)), Fiber.await), driver))

    const followUp = (text: string): Effect.Effect<void> =>
      locked(Effect.zipRight(
        Queue.offer(inbox, text),
        Effect.flatMap(Ref.get(window), ({ idle }) =>
          idle !== undefined ? Effect.void : Effect.zipRight(
            Effect.forkDaemon(driver),
            Ref.set(window, { idle: Effect.unsafeMakeLatch(false) })
          ))
      ))
    const whenIdle = Effect.flatMap(Ref.get(window), ({ idle }) =>
      idle === undefined ? Effect.void : idle.await)

    const transcript = (): Transcript => {
      const t = tally()
      for (const entry of log) {
        if (entry.type === "turn/end") {
          t.completedTurns++
        }
        if (entry.type === "user/message") {
          t.prompts.push(entry.text)
          t.userTexts.push(entry.text)
        }
        if (entry.type === "assistant/message" && entry.text !== "") {
          t.textReplies++
        }
        if (entry.type === "tool/result") {
          t.toolResults++
        }
      }
      return { ...t, entries: log.length }
    }
    const unsupported = (what: string) => () =>
      Promise.reject(new Error(`the shape floor has no ${what}`))
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

/** The floor needs no boot. */
export const make = (): Promise<BenchRuntime> =>
  Promise.resolve({
    name: "floor",
    version: "Harness's fixed shape alone (this checkout's effect)",
    createAgent: (options: AgentOptions) => Effect.runPromise(makeAgent(options.script, options.tools === true)),
    close: () => Promise.resolve()
  })
