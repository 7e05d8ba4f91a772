/**
 * Compaction (ADR 0052, R144–R153): the context estimate that decides an automatic compaction, and the compaction
 * step itself — the `beforeCompact` hook, `step/start`, the summary request, then the response's chunks, the
 * `compaction` record and `step/end` in one append, so a cancelled or crashed compaction leaves no record.
 */
import { Prompt, type Tokenizer } from "@effect/ai"
import type { SessionEvent } from "@harness/domain"
import { History, type SessionLog } from "@harness/session"
import { Cause, Chunk, Effect, Stream } from "effect"
import type { CompactDecision } from "../Hooks.js"
import * as Assembly from "./content.js"
import { chunkJson } from "./content.js"
import type { Env } from "./env.js"
import { appendOwn, provide, publishAppended } from "./live.js"
import type { UsageMark } from "./state.js"
import { honourCancel, locked, read, update } from "./state.js"
import { logFailure } from "./turnFailure.js"

/** The instruction of the summary request when the caller gives none. */
export const defaultInstruction =
  "Summarise the conversation so far for your own later use: the user's requests, what was decided and done, " +
  "facts and file names that matter, and what remains to do. The summary replaces the conversation: leave out " +
  "nothing needed to continue."

/** The default share of the context window the estimate may reach before an automatic compaction. */
export const defaultThreshold = 0.8

/** Bytes per token of the estimate's heuristic (R146). */
const bytesPerToken = 4

const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/** The bytes of a message the heuristic counts: its texts, tool names, raw arguments and results. */
const bytesOf = (message: Prompt.Message): number => {
  if (typeof message.content === "string") return utf8Length(message.content)
  let bytes = 0
  for (const part of message.content) {
    switch (part.type) {
      case "text":
      case "reasoning":
        bytes += utf8Length(part.text)
        break
      case "tool-call":
        bytes += utf8Length(part.name) + utf8Length(JSON.stringify(part.params) ?? "")
        break
      case "tool-result":
        bytes += utf8Length(part.name) +
          utf8Length(typeof part.result === "string" ? part.result : JSON.stringify(part.result) ?? "")
        break
      default:
        break
    }
  }
  return bytes
}

/**
 * The estimated prompt size, in tokens, of a request carrying `messages` (R146): the last request's reported input
 * tokens plus ⌈bytes / 4⌉ of the messages the history gained since; with no usable mark (none reported since the
 * agent started or since the latest compaction), ⌈bytes / 4⌉ of the system prompt and every message.
 */
const estimate = (
  messages: ReadonlyArray<Prompt.Message>,
  system: string | undefined,
  mark: UsageMark | undefined
): number => {
  const usable = mark !== undefined && mark.messages <= messages.length
  let bytes = usable || system === undefined ? 0 : utf8Length(system)
  for (let i = usable ? mark.messages : 0; i < messages.length; i++) bytes += bytesOf(messages[i]!)
  return (usable ? mark.inputTokens : 0) + Math.ceil(bytes / bytesPerToken)
}

/**
 * The estimate of {@link estimate} with the provider's `Tokenizer` counting what the heuristic would (R220): the
 * last reported input tokens plus the tokens of the messages since, or of the system prompt and every message
 * without a usable mark. A tokenizer that fails leaves the estimate to the heuristic.
 */
const estimateWith = (
  tokenizer: Tokenizer.Service | undefined,
  messages: ReadonlyArray<Prompt.Message>,
  system: string | undefined,
  mark: UsageMark | undefined
): Effect.Effect<number> => {
  if (tokenizer === undefined) return Effect.succeed(estimate(messages, system, mark))
  const usable = mark !== undefined && mark.messages <= messages.length
  const counted = usable ? messages.slice(mark.messages) : messages
  const reported = usable ? mark.inputTokens : 0
  if (counted.length === 0 && (usable || system === undefined)) return Effect.succeed(reported)
  const prompt = Prompt.fromMessages(
    usable || system === undefined ? counted : [Prompt.makeMessage("system", { content: system }), ...counted]
  )
  return tokenizer.tokenize(prompt).pipe(
    Effect.map((tokens) => reported + tokens.length),
    Effect.catchAll(() => Effect.succeed(estimate(messages, system, mark)))
  )
}

/** The estimate of the next request now (R146, R220). */
export const currentEstimate = Effect.fnUntraced(function*(env: Env, system: string | undefined) {
  const messages = History.messages(yield* env.log.history)
  return yield* estimateWith(env.compaction?.tokenizer, messages, system, (yield* read(env)).usage)
})

/** The next request's estimate when it passes the threshold, else undefined (never without a configured window). */
export const due = Effect.fnUntraced(function*(env: Env, system: string | undefined) {
  const settings = env.compaction
  if (settings?.contextWindow === undefined) return undefined
  if (History.messages(yield* env.log.history).length === 0) return undefined
  const tokens = yield* currentEstimate(env, system)
  return tokens > settings.threshold * settings.contextWindow ? tokens : undefined
})

/** The `beforeCompact` decision for this compaction: `allow` without a hook; a hook failure blocks it. */
export const decide = (
  env: Env,
  input: { readonly turn: number | undefined; readonly reason: "manual" | "automatic"; readonly estimate: number }
): Effect.Effect<CompactDecision> => {
  const hook = env.options.hooks?.beforeCompact
  if (hook === undefined) return Effect.succeed(allow)
  return provide(env, hook({ agent: env.service, ...input }, Effect.succeed(allow))).pipe(
    Effect.catchAllCause((cause) =>
      Effect.as(
        Effect.logWarning("beforeCompact hook failed; the compaction is blocked", cause),
        { kind: "block", reason: `the beforeCompact hook failed: ${Cause.pretty(cause)}` } as const
      )
    ),
    Effect.zipLeft(honourCancel(env))
  )
}

const allow: CompactDecision = { kind: "allow" }

/**
 * One compaction step (R147): `step/start`, then the summary — the hook's replacement, or the model's answer to the
 * history plus the instruction (a request logged by its chunks) — then the chunks, the `compaction` record and
 * `step/end` in one append. Returns whether a record was written (a model failure or an empty summary writes none
 * and closes the step). A cancel interrupts it with the step open: the driver's close writes `step/end`.
 */
export const runStep = Effect.fnUntraced(function*(
  env: Env,
  turn: number,
  step: number,
  input: {
    readonly reason: "manual" | "automatic"
    readonly estimate: number
    readonly decision: CompactDecision
    readonly system: string | undefined
    readonly instruction: string | undefined
  }
) {
  const opened = yield* locked(env, (tx) =>
    Effect.flatMap(
      Effect.zip(env.log.history, env.log.state),
      ([history, state]) =>
        Effect.as(appendOwn(env, tx, [{ type: "step/start", data: { turn, step } }]), {
          history,
          through: state.nextSeq - 1
        })
    )).pipe(Effect.mapError(logFailure(step)))
  const settings = env.compaction
  const model = settings?.model ?? env.model
  const label = settings?.modelLabel ?? ((yield* read(env)).header?.config.model ?? env.defaultConfig.model)
  let summary: string
  let usage: SessionEvent.Usage | undefined
  let parts: ReadonlyArray<Assembly.AnyStreamPart> = []
  if (input.decision.kind === "replace") {
    summary = input.decision.summary
  } else {
    const instruction = input.instruction ?? settings?.instruction ?? defaultInstruction
    const messages = History.messages(opened.history)
    const prompt = Prompt.fromMessages([
      ...(input.system === undefined ? [] : [Prompt.makeMessage("system", { content: input.system })]),
      ...messages,
      Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: instruction })] })
    ])
    yield* Effect.yieldNow()
    const collected = yield* model.streamText({ prompt }).pipe(Stream.runCollect, Effect.either)
    if (collected._tag === "Left") {
      yield* closeWithout(env, turn, step)
      return false
    }
    parts = Chunk.toReadonlyArray(collected.right)
    let assembling = Assembly.initial
    for (const part of parts) assembling = Assembly.step(assembling, part)
    const assembled = Assembly.result(assembling)
    summary = assembled.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n")
    usage = assembled.usage
    if (assembled.hasError || assembled.finishReason === "error" || summary.trim() === "") {
      yield* closeWithout(env, turn, step, parts)
      return false
    }
  }
  const record: SessionEvent.SessionEventInputOf<"compaction"> = {
    type: "compaction",
    data: {
      turn,
      step,
      summary,
      through: opened.through,
      messages: opened.history.length,
      reason: input.reason,
      estimate: input.estimate,
      model: input.decision.kind === "replace" ? "beforeCompact" : label,
      ...(usage === undefined ? {} : { usage })
    }
  }
  yield* locked(env, (tx) =>
    Effect.zipRight(
      appendAll(env, tx, [
        ...chunkEvents(turn, step, parts),
        record,
        { type: "step/end", data: { turn, step } }
      ]),
      update(env, (s) => ({ ...s, usage: undefined }))
    )).pipe(Effect.mapError(logFailure(step)))
  return true
})

const chunkEvents = (
  turn: number,
  step: number,
  parts: ReadonlyArray<Assembly.AnyStreamPart>
): Array<SessionEvent.SessionEventInput> =>
  parts.map((part) => ({ type: "assistant/chunk" as const, data: { turn, step, chunk: chunkJson(part) } }))

const appendAll = (env: Env, tx: SessionLog.Transaction, events: ReadonlyArray<SessionEvent.SessionEventInput>) =>
  Effect.flatMap(tx.appendAll(events), (appended) => publishAppended(env, appended))

/** A compaction that wrote no record: its chunks (if any) and `step/end`. */
const closeWithout = (
  env: Env,
  turn: number,
  step: number,
  parts: ReadonlyArray<Assembly.AnyStreamPart> = []
) =>
  locked(
    env,
    (tx) => appendAll(env, tx, [...chunkEvents(turn, step, parts), { type: "step/end", data: { turn, step } }])
  )
    .pipe(Effect.mapError(logFailure(step)))
