/**
 * The snapshot of a session (ADR 0027): its head in `<name>.snapshot.json`, its body in `<name>.snapshot-body`,
 * each written aside and renamed into place, the body first; a body saved for another head reads as none.
 */
import type { Ids } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Effect, Option, Schema } from "effect"
import type { Context } from "./context.js"
import type * as SessionState from "./sessionState.js"

type Service = SessionStore.Service

const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())
/** The head file: where the snapshot ends and its head (ADR 0027). */
const SnapshotHeadFile = Schema.Struct({ seq: NonNegativeInt, position: NonNegativeInt, head: Schema.String })
const decodeSnapshotHead = Schema.decodeUnknownEither(Schema.parseJson(SnapshotHeadFile))
/** A head file of the first format (head and body in one `text`): ignored, the log replays (ADR 0027). */
const decodeFirstFormat = Schema.decodeUnknownEither(
  Schema.parseJson(Schema.Struct({ seq: NonNegativeInt, position: NonNegativeInt, text: Schema.String }))
)

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether UTF-8 keeps a string exactly (no lone surrogate): `String.prototype.isWellFormed` where it exists. */
const isWellFormed = (text: string): boolean => {
  const native = (text as unknown as { readonly isWellFormed?: () => boolean }).isWellFormed
  return native === undefined ? !loneSurrogate.test(text) : native.call(text)
}

/** The operations of {@link make}. */
export type Snapshots = ReturnType<typeof make>

/** Saves, loads and drops snapshots over the store's context and its session states. */
export const make = (ctx: Context, states: SessionState.Reads) => {
  const { fail, fs, io, isNotFound, lock, readOptional, snapshotBodyPathOf, snapshotPathOf, writeAside } = ctx
  const { stateOf, writeCache, writing } = states

  /** Removes the snapshot's head, then its body (a body without its head is never read). */
  const removeSnapshot = (id: Ids.SessionId) =>
    Effect.forEach([snapshotPathOf(id), snapshotBodyPathOf(id)], (path) =>
      fs.remove(path).pipe(
        Effect.catchIf(isNotFound, () => Effect.void),
        Effect.mapError(io(id, "remove the snapshot"))
      ), { discard: true })

  /** The snapshot's head file, decoded; none when there is none or it is of the first format. */
  const readSnapshot = (id: Ids.SessionId) =>
    readOptional(id, snapshotPathOf(id), "the snapshot").pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.succeed(Option.none<typeof SnapshotHeadFile.Type>()),
        onSome: (text) => {
          const decoded = decodeSnapshotHead(text)
          if (decoded._tag === "Right") return Effect.succeed(Option.some(decoded.right))
          if (decodeFirstFormat(text)._tag === "Right") {
            return Effect.succeed(Option.none<typeof SnapshotHeadFile.Type>())
          }
          return fail(
            id,
            "Corrupt",
            `the snapshot of session ${JSON.stringify(id)} is invalid: ${decoded.left.message}`
          )
        }
      }))
    )

  /**
   * The body file starts with a line naming the head it was saved with (its head file's JSON, and whether the body
   * follows as it is or as its JSON text), then the body: a body saved for another head (a crash between the two
   * renames of a save) reads as none. The body is written as it is when UTF-8 keeps it exactly (well-formed: every
   * text `JSON.stringify` makes, so every body the log writes), else as its JSON text.
   */
  const bodyLine = (saved: typeof SnapshotHeadFile.Type, json: boolean) =>
    `${JSON.stringify(json ? { ...saved, json } : saved)}\n`

  const bodyFile = (saved: typeof SnapshotHeadFile.Type, body: string) =>
    isWellFormed(body) ? bodyLine(saved, false) + body : bodyLine(saved, true) + JSON.stringify(body)

  const readBody = (id: Ids.SessionId, saved: typeof SnapshotHeadFile.Type) =>
    Effect.map(readOptional(id, snapshotBodyPathOf(id), "the snapshot's body"), (found) => {
      if (Option.isNone(found)) return found
      const text = found.value
      const raw = bodyLine(saved, false)
      if (text.startsWith(raw)) return Option.some(text.slice(raw.length))
      const json = bodyLine(saved, true)
      if (!text.startsWith(json)) return Option.none<string>()
      try {
        const parsed: unknown = JSON.parse(text.slice(json.length))
        return typeof parsed === "string" ? Option.some(parsed) : Option.none<string>()
      } catch {
        return Option.none<string>()
      }
    })

  const saveSnapshot: Service["saveSnapshot"] = (id, snapshot, options) => {
    const issue = SessionStore.snapshotIssue(snapshot)
    if (issue !== undefined) return fail(id, "Conflict", issue)
    return writing(id, options?.lease, (state) =>
      Effect.gen(function*() {
        if (snapshot.position >= state.records) {
          return yield* fail(
            id,
            "Conflict",
            `a snapshot at position ${snapshot.position} covers records the session does not store (it stores ${state.records})`
          )
        }
        const { body, head, position, seq } = snapshot
        const saved = { seq, position, head }
        // The body first, then the head: a crash in between leaves the old head, whose body now reads as none.
        yield* writeAside(id, snapshotBodyPathOf(id), bodyFile(saved, body))
        yield* writeAside(id, snapshotPathOf(id), JSON.stringify(saved))
        // Then the scan cache, while a snapshot is written anyway (never on an append). It only saves later
        // processes a scan: a failure leaves the previous cache, which is checked before any use.
        yield* Effect.ignore(writeCache(id, state))
      }))
  }

  const loadSnapshot: Service["loadSnapshot"] = (id) =>
    Effect.zipRight(
      stateOf(id),
      Effect.map(readSnapshot(id), (found) =>
        Option.map(found, (saved): SessionStore.SnapshotHead => ({
          ...saved,
          body: lock.withPermits(1)(readBody(id, saved))
        })))
    )

  const dropSnapshotFrom = (id: Ids.SessionId, position: number) =>
    Effect.gen(function*() {
      const snapshot = yield* readSnapshot(id)
      if (Option.isSome(snapshot) && snapshot.value.position >= position) yield* removeSnapshot(id)
    })

  return { removeSnapshot, dropSnapshotFrom, saveSnapshot, loadSnapshot }
}
