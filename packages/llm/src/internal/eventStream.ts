/**
 * A chat-completions event stream's body, decoded in one stage: each piece of body text goes to
 * `@effect/experimental`'s SSE parser, the events it completes are folded into the caller's output at once, and
 * the output of a piece leaves as one chunk. One stage per response instead of one per step (events, an end marker,
 * an effectful fold per event, a stop at `[DONE]`, flattening): on a stream whose deltas arrive one network read
 * each, every stage is paid per delta.
 */
import type { AiError } from "@effect/ai"
import * as Sse from "@effect/experimental/Sse"
import type { Effect } from "effect"
import { Channel, Chunk, Either, Stream } from "effect"

const eventStreamLine = /^(?::|(?:data|event|id|retry)[:\r\n])/
const eventStreamFields = ["data:", "event:", "id:", "retry:"]

/**
 * Whether a body starting with `seen` is an event stream: `true` or `false` once its start decides, `undefined`
 * while more text could still make it one. Contract: an optional BOM and blank lines are skipped; then a comment or a
 * `data`, `event`, `id` or `retry` field (followed by `:` or the end of its line) is an event stream.
 */
export const eventStreamStart = (seen: string, ended: boolean): boolean | undefined => {
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
export interface Options<A> {
  /** The parser's limit on one event, in string code units. */
  readonly maxEventSize: number
  /** Marks progress (for the idle timeout): once per piece of body that completed at least one event. */
  readonly progress: Effect.Effect<void>
  /** Folds one event in; a failure ends the stream (after the output the events before it added). */
  readonly event: (
    event: { readonly event: string; readonly data: string }
  ) => Either.Either<Folded<A>, AiError.AiError>
  /** The failure for an event over `maxEventSize`. */
  readonly tooLarge: (maxEventSize: number) => AiError.AiError
  /** The failure for a body that ended before an event said `done`. */
  readonly truncated: () => AiError.AiError
}

/**
 * The output of a body's events. Contract: `retry:` fields are ignored, comments produce nothing, an event over the
 * limit fails the stream; the stream ends at the first event that says `done` (the rest of the body is not read)
 * and fails with `truncated` when the body ends before one. A body that ends after complete lines but without the
 * blank line that dispatches the last event (or ends right after `data: [DONE]`) still dispatches it, as openai-node
 * does; a body cut inside any other line does not (that is a truncation).
 */
export const decode = <A>(
  text: Stream.Stream<string, AiError.AiError>,
  options: Options<A>
): Stream.Stream<A, AiError.AiError> =>
  Stream.suspend(() => {
    // This response's decoding state, read and written only by the fiber running the stream: the parser calls back
    // synchronously from `feed`, so the events a piece completed are in `events` when `feed` returns.
    const events: Array<{ readonly event: string; readonly data: string }> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") events.push(event)
    }, { maxEventSize: options.maxEventSize })
    // The text after the last line break, as far as the end-of-body rule needs it (longer tails are cut).
    let tail = ""
    // Folds the events the parser completed: the output, whether one said done, and the failure that stopped it.
    const fold = () => {
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
      return { output, done, failure }
    }
    // Writes a fold's output, then ends, fails or goes on with `next`.
    const emit = (
      { done, failure, output }: ReturnType<typeof fold>,
      next: Channel.Channel<Chunk.Chunk<A>, Chunk.Chunk<string>, AiError.AiError, AiError.AiError, unknown, unknown>
    ) => {
      const then = failure !== undefined ? Channel.fail(failure) : done ? Channel.void : next
      return output.length === 0 ? then : Channel.zipRight(Channel.write(Chunk.unsafeFromArray(output)), then)
    }
    const read: Channel.Channel<
      Chunk.Chunk<A>,
      Chunk.Chunk<string>,
      AiError.AiError,
      AiError.AiError,
      unknown,
      unknown
    > = Channel.readWithCause({
      onInput: (pieces: Chunk.Chunk<string>) => {
        for (const piece of pieces) {
          const lineBreak = Math.max(piece.lastIndexOf("\n"), piece.lastIndexOf("\r"))
          tail = (lineBreak >= 0 ? piece.slice(lineBreak + 1) : tail + piece).slice(0, 32)
          const error = parser.feed(piece)
          if (error !== undefined) return Channel.fail(options.tooLarge(error.cause.maxEventSize))
        }
        if (events.length === 0) return read
        return Channel.zipRight(Channel.fromEffect(options.progress), emit(fold(), read))
      },
      onFailure: Channel.failCause,
      onDone: () => {
        if (tail === "" || /^data: ?\[DONE\]$/.test(tail)) parser.feed("\n\n")
        const folded = fold()
        return emit(folded, Channel.fail(options.truncated()))
      }
    })
    return Stream.pipeThroughChannelOrFail(text, read)
  })
