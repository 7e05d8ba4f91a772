/**
 * The model's message history, derived purely from the log (R102–R103) as `@effect/ai` `Prompt` messages, so any
 * `LanguageModel` can consume it. It is a fold: one event at a time into an immutable projection with structural
 * sharing, so an agent keeps it current per appended event and never re-reads the whole log to build a request.
 *
 * Mapping: `user/message` and `steering/message` → user messages (verbatim text, no framing); `assistant/message`
 * → an assistant message with its reasoning, text and tool calls (skipped when its content is empty);
 * `tool/result` → a tool message with the result's text blocks joined; everything else → nothing. A tool call's
 * `params` is the parsed arguments when they are valid JSON (`{}` for empty text) and the raw text otherwise; the
 * raw text also travels in the part's options as `options.harness.rawArguments`, so a provider can send it back
 * byte for byte (prefix stability, R103).
 *
 * @since 0.0.0
 */
import type { Prompt } from "@effect/ai"
import type { SessionEvent } from "@harness/domain"

/**
 * The provider-options key under which derived parts carry Harness facts (`rawArguments` on tool calls).
 *
 * @since 0.0.0
 */
export const optionsKey = "harness"

/**
 * The derived history: an opaque, immutable projection.
 *
 * @since 0.0.0
 */
export interface History {
  readonly length: number
}

/** @since 0.0.0 */
export declare const empty: History

/**
 * Folds one event in. Contract: O(1) amortised; `history` is not changed (the result shares structure with it).
 *
 * @since 0.0.0
 */
export declare const fold: (history: History, event: SessionEvent.SessionEvent) => History

/**
 * The messages of a history, in log order. Contract: cheap to call once per request (no re-derivation).
 *
 * @since 0.0.0
 */
export declare const messages: (history: History) => ReadonlyArray<Prompt.Message>

/**
 * The whole-log derivation: `messages(events.reduce(fold, empty))`.
 *
 * @since 0.0.0
 */
export declare const deriveMessages: (events: Iterable<SessionEvent.SessionEvent>) => ReadonlyArray<Prompt.Message>
