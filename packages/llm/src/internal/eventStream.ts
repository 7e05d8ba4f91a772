/**
 * A chat-completions event stream's body, decoded synchronously: each piece of body text goes to
 * `@effect/experimental`'s SSE parser, and the events it completes are folded into the caller's output at once, so
 * the output of a piece (one network read, however many events it holds) leaves as one chunk. No stage of its own:
 * the response's pull (`client.ts`) feeds it, so nothing between the body and the agent is paid per delta but the
 * body's read (ADR 0083).
 */
import type { AiError } from "@effect/ai"
import * as Sse from "@effect/experimental/Sse"
import { Chunk, Effect, Either, Option } from "effect"

const eventStreamLine = /^(?::|(?:data|event|id|retry)[:\r\n])/
const eventStreamFields = ["data:", "event:", "id:", "retry:"]

/**
 * Whether a body starting with `seen` is an event stream: `true` or `false` once its start decides, `undefined`
 * while more text could still make it one. Contract: an optional BOM and blank lines are skipped; then a comment or a
 * `data`, `event`, `id` or `retry` field (followed by `:` or the end of its line) is an event stream.
 */
const eventStreamStart = (seen: string, ended: boolean): boolean | undefined => {
  const start = seen.replace(/^\uFEFF/, "").replace(/^[\r\n]+/, "")
  if (eventStreamLine.test(start)) return true
  if (ended) return /^(?:data|event|id|retry)$/.test(start)
  return start === "" || eventStreamFields.some((field) => field.startsWith(start)) ? undefined : false
}

/** One event's contribution: the output it adds, and whether it ended the response (`[DONE]`). */
export interface Folded<A> {
  readonly output: ReadonlyArray<A>
  readonly done: boolean
}

/** How a body is decoded. */
interface Options<A> {
  /** The parser's limit on one event, in string code units. */
  readonly maxEventSize: number
  /** Folds one event in; a failure ends the stream (after the output the events before it added). */
  readonly event: (
    event: { readonly event: string; readonly data: string }
  ) => Either.Either<Folded<A>, AiError.AiError>
  /** The failure for an event over `maxEventSize`. */
  readonly tooLarge: (maxEventSize: number) => AiError.AiError
  /** The failure for a body that ended before an event said `done`. */
  readonly truncated: () => AiError.AiError
}

/** What a piece of body (or its end) came to: the output of the events it completed, and how the body goes on. */
interface Fed<A> {
  readonly output: ReadonlyArray<A>
  /** Whether the piece completed at least one event (what the idle timeout counts as progress). */
  readonly events: boolean
  /** An event said `done`: the body ends here (nothing after it is read). */
  readonly done: boolean
  /** The failure that ends the body, after `output`. */
  readonly failure: AiError.AiError | undefined
}

/** One response's decoder: fed each piece of body text in order, then told where the body ended. */
interface Decoder<A> {
  readonly feed: (piece: string) => Fed<A>
  /** The body ended: the last event it dispatches, and `truncated` unless an event said `done`. */
  readonly end: () => Fed<A>
}

/**
 * A body's decoder. Contract: `retry:` fields are ignored, comments produce nothing, an event over the limit fails
 * the body (without the output of that piece); the body ends at the first event that says `done`, and fails with
 * `truncated` when it ends before one. A body that ends after complete lines but without the blank line that
 * dispatches the last event (or ends right after `data: [DONE]`) still dispatches it, as openai-node does; a body
 * cut inside any other line does not (that is a truncation). Its state is the caller's: one decoder per response,
 * used by one fiber at a time (the parser calls back synchronously from `feed`).
 */
const decoder = <A>(options: Options<A>): Decoder<A> => {
  const events: Array<{ readonly event: string; readonly data: string }> = []
  const parser = Sse.makeParser((event) => {
    if (event._tag === "Event") events.push(event)
  }, { maxEventSize: options.maxEventSize })
  // The text after the last line break, as far as the end-of-body rule needs it (longer tails are cut).
  let tail = ""
  // Folds the events the parser completed: the output, whether one said done, and the failure that stopped it.
  const fold = (): Fed<A> => {
    if (events.length === 0) return nothing
    const output: Array<A> = []
    let done = false
    let failure: AiError.AiError | undefined
    for (const event of events) {
      const folded = options.event(event)
      if (Either.isLeft(folded)) {
        failure = folded.left
        break
      }
      for (const item of folded.right.output) output.push(item)
      if (folded.right.done) {
        done = true
        break
      }
    }
    events.length = 0
    return { output, events: true, done, failure }
  }
  return {
    feed: (piece) => {
      const lineBreak = Math.max(piece.lastIndexOf("\n"), piece.lastIndexOf("\r"))
      tail = (lineBreak >= 0 ? piece.slice(lineBreak + 1) : tail + piece).slice(0, 32)
      const error = parser.feed(piece)
      if (error !== undefined) {
        events.length = 0
        return { output: [], events: false, done: false, failure: options.tooLarge(error.cause.maxEventSize) }
      }
      return fold()
    },
    end: () => {
      if (tail === "" || /^data: ?\[DONE\]$/.test(tail)) parser.feed("\n\n")
      const folded = fold()
      return folded.done || folded.failure !== undefined ? folded : { ...folded, failure: options.truncated() }
    }
  }
}

const nothing: Fed<never> = { output: [], events: false, done: false, failure: undefined }

/** What a response's pull reads: the body's next bytes (`Stream.toPull`'s shape). */
type Read = Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<AiError.AiError>>

/** How a response's body is pulled: decoded as {@link decoder} says, with what the body's label leaves open. */
interface PullOptions<A> extends Options<A> {
  /** Marks progress (for the idle timeout): once per read of the body that completed at least one event. */
  readonly progress: Effect.Effect<void>
  /** Whether the response is labelled `text/event-stream`; otherwise its start decides ({@link eventStreamStart}). */
  readonly labelled: boolean
  /** The failure for a body that does not start like an event stream, given up to `headLimit` of its text. */
  readonly notEventStream: (text: string) => AiError.AiError
  /** The most of a body that is not an event stream read to describe it. */
  readonly headLimit: number
}

/**
 * Opens a response's body as a pull of its events' output: each pull reads the body until a read completes events
 * with output, and hands over the output of that read (one network read's events, however many) as one chunk.
 *
 * Contract: an unlabelled body is read only until its start decides — an event stream is then passed on whole (the
 * text read to decide first), anything else fails the open with `notEventStream` (after reading up to `headLimit`
 * of it). Each pull succeeds with a non-empty chunk, or fails: `Option.none()` once an event said `done`, the
 * body's failure, or the decoder's (after the output before it). The pull is one fiber's (one pull at a time).
 */
export const pull = <A>(read: Read, options: PullOptions<A>) =>
  Effect.gen(function*() {
    const text = new TextDecoder()
    const decode = (chunk: Chunk.Chunk<Uint8Array>) => {
      let piece = ""
      for (const bytes of chunk) piece += text.decode(bytes, { stream: true })
      return piece
    }
    // What the body's start decides on: text read, and whether the body ended while deciding.
    let seen = ""
    let ended = false
    if (!options.labelled) {
      const nextText = Effect.matchEffect(read, {
        onFailure: Option.match({ onNone: () => Effect.succeed(undefined), onSome: Effect.fail }),
        onSuccess: (chunk) => Effect.succeed(decode(chunk))
      })
      let verdict = eventStreamStart(seen, ended)
      while (verdict === undefined) {
        const piece = yield* nextText
        if (piece === undefined) ended = true
        else seen += piece
        verdict = eventStreamStart(seen, ended)
      }
      if (!verdict) {
        while (!ended && seen.length < options.headLimit) {
          const piece = yield* Effect.orElseSucceed(nextText, () => undefined)
          if (piece === undefined) ended = true
          else seen += piece
        }
        return yield* Effect.fail(options.notEventStream(seen.slice(0, options.headLimit)))
      }
    }
    const body = decoder(options)
    // The rest of the response once the body ended, failed or said done; read and written only by the pulling fiber.
    let after: Effect.Effect<never, Option.Option<AiError.AiError>> | undefined
    const settle = (fed: Fed<A>, progress: boolean): Effect.Effect<Chunk.Chunk<A>, Option.Option<AiError.AiError>> => {
      if (fed.failure !== undefined) after = Effect.fail(Option.some(fed.failure))
      else if (fed.done) after = Effect.fail(Option.none())
      const out = fed.output.length > 0 ? Effect.succeed(Chunk.unsafeFromArray(fed.output)) : (after ?? next)
      return progress && fed.events ? Effect.zipRight(options.progress, out) : out
    }
    const next: Effect.Effect<Chunk.Chunk<A>, Option.Option<AiError.AiError>> = Effect.suspend(() => {
      if (after !== undefined) return after
      if (seen !== "") {
        const start = seen
        seen = ""
        return settle(body.feed(start), true)
      }
      if (ended) return settle(body.end(), false)
      return Effect.matchEffect(read, {
        onFailure: Option.match({
          onNone: () => settle(body.end(), false),
          onSome: (error) => Effect.fail(Option.some(error))
        }),
        onSuccess: (chunk) => settle(body.feed(decode(chunk)), true)
      })
    })
    return next
  })
