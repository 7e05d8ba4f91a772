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
 * byte for byte (prefix stability, R103). An assistant message carries its logged `provenance` (route and
 * provider replay state) as `options.harness.provenance`. Consecutive user messages are not merged.
 *
 * Compaction (ADR 0052, R144): a `compaction` record replaces the first `messages` folded messages by its summary,
 * one user message with the summary text verbatim; the messages folded after them follow it. The latest compaction
 * wins (its summary already covers any earlier one). The log keeps every event; only the derivation changes.
 *
 * Rollback (ADR 0061): a `turn/rollback` record leaves out the folded messages `from..through - 1` and every message
 * folded after it until the next `turn/end` (its turn's); a compaction covers the ranges before it.
 *
 * @since 0.0.0
 */
import type { Prompt } from "@effect/ai"
import type { SessionEvent } from "@harness/domain"
import type { AppendOnly } from "./internal/appendOnly.js"
import * as internal from "./internal/history.js"

/**
 * The provider-options key under which derived messages and parts carry Harness facts: `rawArguments` on tool-call
 * parts, `provenance` on assistant messages.
 *
 * @since 0.0.0
 * @category constants
 */
export const optionsKey: "harness" = internal.optionsKey

/**
 * Marks a {@link History}; its value is the persistent sequence of derived messages.
 *
 * @since 0.0.0
 * @category symbols
 */
export const TypeId: typeof internal.TypeId = internal.TypeId

/**

 * @since 0.0.0

 * @category symbols

 */
export type TypeId = typeof TypeId

/**
 * The derived history: an opaque, immutable projection.
 *
 * @since 0.0.0
 * @category models
 */
export interface History {
  /**
   * The number of messages folded from the log (a compaction shows a prefix of them as its summary in
   * {@link messages}; they are still counted here).
   */
  readonly length: number
  /** The prefix the latest compaction replaced: its first `count` folded messages shown as `messages`. */
  readonly replaced?: {
    readonly count: number
    readonly messages: ReadonlyArray<Prompt.Message>
  } | undefined
  /**
   * The ranges of folded messages rollbacks left out since the latest compaction: absolute `[from, to)` pairs in log
   * order; `open` while the rolled-back turn has not ended.
   */
  readonly dropped?: {
    readonly ranges: ReadonlyArray<readonly [number, number]>
    readonly open: boolean
  } | undefined
  /** The derived messages, in an array successive histories share (an implementation detail; use {@link messages}). */
  readonly [TypeId]: AppendOnly<Prompt.Message>
}

/**
 * The history of an empty log.
 *
 * @since 0.0.0
 * @category constants
 */
export const empty: History = internal.empty

/**
 * Folds one event in.
 *
 * Contract: pure; O(log n) at worst (one persistent append) and O(1) for an event the model never sees, which
 * returns `history` itself; `history` is not changed (the result shares structure with it). Derived messages and
 * their parts are frozen.
 *
 * @since 0.0.0
 * @category utils
 */
export const fold: (history: History, event: SessionEvent.SessionEvent) => History = internal.fold

/**
 * A history whose first `count` folded messages are shown as `messages`: the one mechanism by which a record
 * replaces part of the history (a compaction's summary). The folded messages are kept, so a later record may
 * replace a different prefix.
 *
 * @since 0.0.0
 * @category utils
 */
export const replacePrefix: (
  history: History,
  replaced: { readonly count: number; readonly messages: ReadonlyArray<Prompt.Message> }
) => History = internal.replacePrefix

/**
 * The messages of a history, in log order (after the latest compaction: its summary, then what followed it), without
 * the ranges rollbacks left out.
 *
 * Contract: cheap to call once per request: no re-derivation, one copy of the message references per call (an array
 * of the caller's own, kept by nothing else: a cached copy held by a history that outlived a scavenge kept every
 * later copy alive in the young generation, ADR 0033).
 *
 * @since 0.0.0
 * @category utils
 */
export const messages: (history: History) => ReadonlyArray<Prompt.Message> = internal.messages

/**
 * The whole-log derivation: `messages(events.reduce(fold, empty))`.
 *
 * @since 0.0.0
 * @category utils
 */
export const deriveMessages: (events: Iterable<SessionEvent.SessionEvent>) => ReadonlyArray<Prompt.Message> =
  internal.deriveMessages
