/**
 * Everything the session package fails with, as one family shaped like `@effect/ai`'s `AiError`: the log's refusal
 * (`SessionLogError`) and the storage driver's failure (`SessionStoreError`), each a schema carrying the family's
 * {@link TypeId}, one union type and union schema ({@link SessionError}) and the guard {@link isSessionError}, so a
 * caller can catch "anything the session said" in one place (ADR 0074).
 *
 * @since 0.0.0
 */
import { Predicate, Schema } from "effect"
import { SessionLogError } from "./SessionLogError.js"
import { SessionStoreError } from "./SessionStoreError.js"

/**
 * The mark every member of {@link SessionError} carries, on its prototype — as Effect puts its type ids on
 * prototypes — so an error's own keys, its encoding and its JSON are unchanged.
 *
 * @since 0.0.0
 * @category symbols
 */
export const TypeId = "~@harness/session/SessionError"

/**
 * Whether `u` is an error of the session package (a `SessionLogError` or a `SessionStoreError`).
 *
 * Contract: true for every failure `SessionLog`, `Sessions` and a `SessionStore` raise themselves, also after a round trip through
 * the {@link SessionError} schema; false for a plain object that only has a member's `_tag` (R229).
 *
 * @example
 * ```ts
 * import { SessionStoreError, SessionError } from "@harness/session"
 *
 * SessionError.isSessionError(new SessionStoreError.SessionStoreError({ reason: "Io", message: "disk full" })) // true
 * SessionError.isSessionError(new Error("disk full")) // false
 * ```
 *
 * @since 0.0.0
 * @category guards
 */
export const isSessionError = (u: unknown): u is SessionError => Predicate.hasProperty(u, TypeId)

/**
 * Every error of the session package: what `SessionLog`, `Sessions` and a `SessionStore` fail with.
 *
 * @since 0.0.0
 * @category errors
 */
export type SessionError = SessionLogError | SessionStoreError

/**
 * The schema of {@link SessionError}: what an API or a durable record carries.
 *
 * @since 0.0.0
 * @category errors
 */
export const SessionError: Schema.Union<[typeof SessionLogError, typeof SessionStoreError]> = Schema.Union(
  SessionLogError,
  SessionStoreError
)

// Every member carries the mark: a member added to the union is marked with it.
for (const member of SessionError.members) Object.defineProperty(member.prototype, TypeId, { value: TypeId })
