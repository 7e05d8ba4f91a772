/**
 * `harness sessions`: list, show, export, fork and remove stored sessions. Ids may be abbreviated to a unique
 * prefix.
 */
import type { SessionEvent, Store } from "@harness/domain"
import type { Ids } from "@harness/domain"
import { LogCheck, SessionLog, SessionStore } from "@harness/session"
import { Subagents } from "@harness/subagents"
import { Chunk, Effect, Either, Schema, Stream } from "effect"
import { CommandError } from "../CliError.js"
import * as Timeline from "./timeline.js"

const storeError = (e: SessionStore.SessionStoreError | SessionLog.SessionLogError) =>
  new CommandError({ reason: "Store", message: e.message })

/** The stored session whose id is `text` or starts with it. */
export const resolveId = (text: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    // Damaged sessions resolve too, so `rm` can delete them.
    const [listed, damaged] = yield* Effect.mapError(Effect.zip(store.list, store.damaged), storeError)
    const all = [...listed.map((s) => s.header.id), ...damaged.map((d) => d.id)]
    const exact = all.find((id) => id === text)
    const matches = exact !== undefined ? [exact] : all.filter((id) => id.startsWith(text))
    if (matches.length === 1) return matches[0]!
    return yield* new CommandError({
      reason: "SessionNotFound",
      message: matches.length === 0
        ? `no session ${JSON.stringify(text)} in this store (harness sessions list shows them)`
        : `${JSON.stringify(text)} matches ${matches.length} sessions: give more of the id`
    })
  })

/** A time as `sessions list` shows it (UTC, to the second). */
export const when = (millis: number): string => new Date(millis).toISOString().replace("T", " ").slice(0, 19)

/** `sessions list`: newest last, one line each. */
export const list = Effect.gen(function*() {
  const store = yield* SessionStore.SessionStore
  const [all, damaged] = yield* Effect.mapError(Effect.zip(store.list, store.damaged), storeError)
  // One unreadable session never hides the others: it is named, with what is wrong and how to delete it.
  const problems = damaged.map((d) => `damaged: ${d.id}: ${d.problem} (harness sessions rm ${d.id} deletes it)`)
  if (all.length === 0) {
    return [...problems, "No sessions yet: `harness run \"hello\"` or `harness demo` creates one."]
  }
  const rows = [...all].sort((a, b) => a.lastActivity - b.lastActivity).map((s: Store.SessionSummary) => [
    s.header.id,
    when(s.lastActivity),
    `${s.turns} turn${s.turns === 1 ? "" : "s"}`,
    `${s.events} events`,
    s.header.parent ? `fork of ${s.header.parent.id.slice(0, 8)}@${s.header.parent.seq}` : "",
    JSON.stringify((s.firstPrompt ?? "").slice(0, 50))
  ])
  const widths = [0, 1, 2, 3, 4].map((i) => Math.max(...rows.map((r) => r[i]!.length)))
  return [
    `${all.length} session${all.length === 1 ? "" : "s"} (last active last):`,
    ...rows.map((r) => r.map((cell, i) => (i < 5 ? cell.padEnd(widths[i]!) : cell)).join("  ").replace(/\s+$/, "")),
    ...problems
  ]
})

const decodeRecord = Schema.decodeUnknownEither(Timeline.StoreRecordFromJson)

/** Every stored record of a session, decoded (a record that does not decode is reported, not skipped). */
export const records = (id: Ids.SessionId) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const rows = yield* Stream.runCollect(store.load(id)).pipe(Effect.mapError(storeError))
    const out: Array<SessionEvent.SessionEvent | Store.InboxRecord> = []
    for (const row of Chunk.toReadonlyArray(rows)) {
      const decoded = decodeRecord(row.text)
      if (Either.isLeft(decoded)) {
        return yield* new CommandError({
          reason: "Store",
          message: `session ${id}: the record at position ${row.position} does not decode: ${decoded.left.message}`
        })
      }
      out.push(decoded.right)
    }
    return out
  })

/** A session's events among its stored records. */
export const eventsOf = (all: ReadonlyArray<SessionEvent.SessionEvent | Store.InboxRecord>) =>
  all.filter((r): r is SessionEvent.SessionEvent => "seq" in r)

/** A session's subagents as an indented tree: each child with its name and how its last turn ended. */
export const renderTree = (tree: Subagents.Tree): Array<string> => {
  const lines: Array<string> = []
  const visit = (node: Subagents.Tree, indent: string) => {
    node.children.forEach((child, i) => {
      const last = i === node.children.length - 1
      lines.push(`${indent}${last ? "└─" : "├─"} ${child.id} (${child.agent ?? "?"}): ${child.last}`)
      visit(child, `${indent}${last ? "   " : "│  "}`)
    })
  }
  visit(tree, "  ")
  return lines
}

/**
 * `sessions show`'s lines for a session's records: a header, the subagent tree (when there is one), the timeline,
 * and the log check.
 */
export const showLines = (
  id: Ids.SessionId,
  header: { readonly createdAt: number; readonly parent?: { readonly id: string; readonly seq: number } | undefined },
  all: ReadonlyArray<SessionEvent.SessionEvent | Store.InboxRecord>,
  tree: Subagents.Tree
): Array<string> => {
  const events = eventsOf(all)
  const violations = LogCheck.checkLog(events)
  return [
    `session ${id}, created ${when(header.createdAt)}${
      header.parent ? `, forked from ${header.parent.id} at #${header.parent.seq}` : ""
    }`,
    ...(tree.spawnedBy === undefined
      ? []
      : [`subagent ${tree.agent} of session ${tree.spawnedBy.parent} (call ${tree.spawnedBy.callId})`]),
    ...(tree.children.length === 0 ? [] : [`subagents of ${id}:`, ...renderTree(tree)]),
    ...Timeline.render(all),
    violations.length === 0
      ? `${events.length} events; the log checks clean.`
      : `${events.length} events; the log check found ${violations.length} problem(s): ${
        violations.map((v) => `${v.rule} at #${v.seq}`).join(", ")
      }`
  ]
}

/** `sessions show`: a header, the subagent tree, the timeline, and the log check. */
export const show = (text: string) =>
  Effect.gen(function*() {
    const id = yield* resolveId(text)
    const store = yield* SessionStore.SessionStore
    const header = yield* Effect.mapError(store.header(id), storeError)
    const all = yield* records(id)
    // A log the tree cannot read (the timeline says why) shows no tree rather than no session.
    const tree = yield* Subagents.tree(id).pipe(
      Effect.orElseSucceed((): Subagents.Tree => ({ id, last: "none", children: [] }))
    )
    return showLines(id, header, all, tree)
  })

/** `sessions export`: JSON Lines (the stored records as they are) or a Markdown transcript. */
export const exportSession = (text: string, format: "jsonl" | "md") =>
  Effect.gen(function*() {
    const id = yield* resolveId(text)
    if (format === "md") return Timeline.markdown(id, eventsOf(yield* records(id)))
    const store = yield* SessionStore.SessionStore
    const rows = yield* Stream.runCollect(store.load(id)).pipe(Effect.mapError(storeError))
    return Chunk.toReadonlyArray(rows).map((row) => row.text).join("\n")
  })

/** `sessions rm`. */
export const remove = (text: string) =>
  Effect.gen(function*() {
    const id = yield* resolveId(text)
    const store = yield* SessionStore.SessionStore
    yield* Effect.mapError(store.remove(id), storeError)
    return id
  })

/**
 * The seq `sessions fork` cuts at: the last event at or before `limit` outside every turn (-1 when there is none);
 * with `turnEnds`, the last `turn/end` (where a server's fork may cut).
 */
export const boundary = (
  events: ReadonlyArray<SessionEvent.SessionEvent>,
  limit: number,
  turnEnds = false
): number => {
  let cut = -1
  let depth = 0
  for (const event of events) {
    if (event.seq > limit) break
    if (event.type === "turn/start") depth++
    if (event.type === "turn/end") depth--
    if (depth === 0 && (!turnEnds || event.type === "turn/end")) cut = event.seq
  }
  return cut
}

/** The refusal of a fork with no boundary at or before `limit`. */
export const noBoundary = (id: Ids.SessionId, limit: number) =>
  new CommandError({
    reason: "Input",
    message: `session ${id} has no turn boundary at or before #${limit}: give a later --at (harness sessions ` +
      `show ${id} numbers the events)`
  })

/** What `sessions fork` made: the new session `to`, with `events` events of `from` up to seq `cut`. */
export interface Forked {
  readonly from: Ids.SessionId
  readonly to: Ids.SessionId
  readonly events: number
  readonly cut: number
}

/**
 * The stored sessions as the `sessions` commands reach them: in the store the settings select ({@link local}), or
 * on a server (`--remote`, `remote.ts`). Ids may be a unique prefix; failures are `CommandError`s in words.
 */
export interface Place {
  readonly list: Effect.Effect<ReadonlyArray<string>, CommandError>
  readonly show: (text: string) => Effect.Effect<ReadonlyArray<string>, CommandError>
  readonly exportSession: (text: string, format: "jsonl" | "md") => Effect.Effect<string, CommandError>
  readonly fork: (text: string, at: number | undefined) => Effect.Effect<Forked, CommandError>
  readonly remove: (text: string) => Effect.Effect<Ids.SessionId, CommandError>
}

/**
 * `sessions fork`: a new session seeded with the log up to `at` (default: all of it), cut back to the last turn
 * boundary at or before it (a seed may not end inside a turn, R97); its header records the parent and that seq.
 */
export const fork = (text: string, at: number | undefined) =>
  Effect.gen(function*() {
    const id = yield* resolveId(text)
    // Read only: a fork beside the session's live writer neither waits for it nor disturbs it.
    const source = yield* SessionLog.open(id, { readOnly: true }).pipe(Effect.mapError(storeError))
    const events = yield* source.events
    const limit = at ?? events.length - 1
    const cut = boundary(events, limit)
    if (cut < 0) return yield* noBoundary(id, limit)
    const seed = events.slice(0, cut + 1)
    // The fork's header names its parent and the last seq it copied (R112).
    const fresh = yield* SessionLog.make({ seed, parent: { id, seq: cut } }).pipe(Effect.mapError(storeError))
    yield* Effect.mapError(fresh.close, storeError)
    return { from: id, to: fresh.id, events: seed.length, cut } satisfies Forked
  })

/** The sessions of the store in context. */
export const local: Effect.Effect<Place, never, SessionStore.SessionStore> = Effect.map(
  Effect.context<SessionStore.SessionStore>(),
  (context): Place => ({
    list: Effect.provide(list, context),
    show: (text) => Effect.provide(show(text), context),
    exportSession: (text, format) => Effect.provide(exportSession(text, format), context),
    fork: (text, at) => Effect.provide(fork(text, at), context),
    remove: (text) => Effect.provide(remove(text), context)
  })
)
