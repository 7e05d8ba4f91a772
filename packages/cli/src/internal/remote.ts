/**
 * `--remote` for the commands that read or change stored sessions (`sessions list/show/export/fork/rm`) and for the
 * chat's `/goal`: the same answers as in this process, from a Harness server's routes through the typed client
 * (`@harness/server`'s `Client`, ADR 0063). Refusals are `CommandError`s naming the URL, never the token.
 */
import type { Ids } from "@harness/domain"
import { GoalCommand, GoalState } from "@harness/goal"
import type { Client } from "@harness/server"
import type { Redacted, Scope } from "effect"
import { Effect, Either, Layer, Schema } from "effect"
import { CommandError } from "../CliError.js"
import * as Goal from "./goal.js"
import * as Sessions from "./sessions.js"
import * as Timeline from "./timeline.js"

/** The typed client of the server at `url`, over Node's HTTP client, for the current scope. */
export const connect = (url: string, token: Redacted.Redacted): Effect.Effect<Client.Client, never, Scope.Scope> =>
  Effect.gen(function*() {
    const [{ Client }, { NodeHttpClient }] = yield* Effect.promise(() =>
      Promise.all([import("@harness/server"), import("@effect/platform-node")])
    )
    const http = yield* Layer.build(NodeHttpClient.layer)
    return yield* Client.make({ baseUrl: url, token }).pipe(Effect.provide(http))
  })

const field = (e: unknown, name: string): string =>
  typeof e === "object" && e !== null && name in e ? String((e as Record<string, unknown>)[name]) : "" // checked

/**
 * A failure of a request to the server at `url`, in words: the server cannot be reached, it refused the token
 * (401, 403, 429, 413), it has no such session, or it answered something this client cannot read. A typed refusal
 * the command has its own words for is mapped before this.
 */
export const failure = (url: string) => (e: unknown): CommandError => {
  const message = field(e, "message") || String(e)
  switch (field(e, "_tag")) {
    case "CommandError":
      return e as CommandError // already in words (the guard is the tag)
    case "Unauthorized":
    case "Forbidden":
    case "TooManyRequests":
    case "PayloadTooLarge":
      return new CommandError({ reason: "Remote", message: `${url}: the server refused: ${message}` })
    case "SessionNotFound":
      return new CommandError({ reason: "SessionNotFound", message: `${url}: ${message}` })
    case "ParseError":
    case "ResponseError":
      return new CommandError({ reason: "Remote", message: `${url}: the server's answer cannot be read: ${message}` })
    case "RequestError":
      return new CommandError({ reason: "Remote", message: `${url}: the server cannot be reached: ${message}` })
    default:
      return new CommandError({ reason: "Remote", message: `${url}: ${message}` })
  }
}

/** The session on the server whose id is `text` or starts with it. */
export const resolveId = (client: Client.Client, url: string, text: string) =>
  Effect.flatMap(Effect.mapError(client.sessions.list(), failure(url)), (all) => {
    const exact = all.find((s) => s.id === text)
    const matches = exact !== undefined ? [exact] : all.filter((s) => s.id.startsWith(text))
    return matches.length === 1
      ? Effect.succeed(matches[0]!.id)
      : new CommandError({
        reason: "SessionNotFound",
        message: matches.length === 0
          ? `no session ${JSON.stringify(text)} on ${url} (harness sessions list --remote ${url} shows them)`
          : `${JSON.stringify(text)} matches ${matches.length} sessions on ${url}: give more of the id`
      })
  })

/** `sessions list`'s lines for the server's sessions. */
export const list = (client: Client.Client, url: string) =>
  Effect.map(Effect.mapError(client.sessions.list(), failure(url)), (all) =>
    all.length === 0
      ? [`No sessions on ${url} yet: harness run --remote ${url} "hello" creates one.`]
      : [
        `${all.length} session${all.length === 1 ? "" : "s"} (last active last):`,
        ...[...all].sort((a, b) => a.lastActivity - b.lastActivity).map((s) =>
          [s.id, Sessions.when(s.lastActivity), `${s.turns} turn${s.turns === 1 ? "" : "s"}`, `${s.events} events`]
            .concat(s.parent === undefined ? [] : [`fork of ${s.parent.id.slice(0, 8)}@${s.parent.seq}`])
            .concat(s.title === undefined ? [] : [JSON.stringify(s.title)]).join("  ")
        )
      ])

const decodeRecord = Schema.decodeUnknownEither(Timeline.StoreRecordFromJson)

/** A session's stored records on the server, as JSON Lines (`GET /sessions/:id/records`) and decoded. */
const records = (client: Client.Client, url: string, id: Ids.SessionId) =>
  Effect.gen(function*() {
    const text = yield* Effect.mapError(client.sessions.records({ path: { id } }), failure(url))
    const lines = text.split("\n").filter((line) => line !== "")
    const decoded = []
    for (const [position, line] of lines.entries()) {
      const record = decodeRecord(line)
      if (Either.isLeft(record)) {
        return yield* new CommandError({
          reason: "Remote",
          message: `${url}: session ${id}: record ${position} does not decode: ${record.left.message}`
        })
      }
      decoded.push(record.right)
    }
    return { lines, records: decoded }
  })

/**
 * The `sessions` commands against the server at `url`. Contract: the same lines as in a store, with these
 * differences a server makes: `show` has no subagent tree (the server has no route for one), and `fork` cuts at a
 * `turn/end` (where `Sessions.fork` cuts), never at a message between turns.
 */
export const place = (url: string, token: Redacted.Redacted): Effect.Effect<Sessions.Place, never, Scope.Scope> =>
  Effect.map(connect(url, token), (client): Sessions.Place => ({
    list: list(client, url),
    show: (text) =>
      Effect.gen(function*() {
        const id = yield* resolveId(client, url, text)
        const info = yield* Effect.mapError(client.sessions.show({ path: { id } }), failure(url))
        const { records: all } = yield* records(client, url, id)
        return Sessions.showLines(id, info, all, { id, last: "none", children: [] })
      }),
    exportSession: (text, format) =>
      Effect.gen(function*() {
        const id = yield* resolveId(client, url, text)
        const { lines, records: all } = yield* records(client, url, id)
        return format === "md" ? Timeline.markdown(id, Sessions.eventsOf(all)) : lines.join("\n")
      }),
    fork: (text, at) =>
      Effect.gen(function*() {
        const id = yield* resolveId(client, url, text)
        const { records: all } = yield* records(client, url, id)
        const events = Sessions.eventsOf(all)
        const limit = at ?? events.length - 1
        const cut = Sessions.boundary(events, limit, true)
        if (cut < 0) return yield* Sessions.noBoundary(id, limit)
        const child = yield* client.sessions.fork({ path: { id }, payload: { at: cut } }).pipe(
          Effect.mapError((e) => e._tag === "ForkRefused" ? Sessions.noBoundary(id, limit) : failure(url)(e))
        )
        return { from: id, to: child.id, events: child.events, cut }
      }),
    remove: (text) =>
      Effect.gen(function*() {
        const id = yield* resolveId(client, url, text)
        yield* Effect.mapError(client.sessions.remove({ path: { id } }), failure(url))
        return id
      })
  }))

/**
 * The chat's `/goal` on a session of the server (the goal routes): `set <objective>` (create, or change the
 * objective of the unfinished goal), `show`, `pause`, `resume`, `clear`, and `create` / `edit`, answering with the
 * words the local `/goal` uses. Failures are the server's `GoalError` (or a refusal), with messages fit to print.
 */
export const goal =
  (client: Client.Client, url: string, id: Ids.SessionId) =>
  (argument: string): Effect.Effect<string, { readonly message: string }> =>
    Effect.gen(function*() {
      const text = argument.trim()
      const space = text.search(/\s/)
      const verb = (space === -1 ? text : text.slice(0, space)).toLowerCase()
      const rest = space === -1 ? "" : text.slice(space + 1).trim()
      const path = { id }
      const status = client.goal.status({ path })
      switch (verb) {
        case "":
        case "show": {
          const view = yield* status
          return GoalCommand.render({ ...GoalState.empty, ...view })
        }
        case "set":
        case "create":
        case "edit": {
          if (rest === "") return yield* Effect.fail({ message: `what is the objective? ${Goal.usage}` })
          const before = (yield* status).goal
          const unfinished = before !== undefined && before.phase !== "complete"
          if (verb === "create" && unfinished) {
            return yield* Effect.fail({
              message: `goal ${before.id} is not finished: /goal clear it first, or /goal set a new objective`
            })
          }
          if (verb === "edit" && !unfinished) {
            return yield* Effect.fail({ message: "there is no goal: /goal set <objective>" })
          }
          const goal = yield* client.goal.set({ path, payload: { objective: rest } })
          return `${unfinished ? "Edited" : "Created"} goal ${goal.id}: ${goal.objective}`
        }
        case "pause":
        case "resume": {
          const goal = yield* client.goal[verb]({ path })
          return `Goal ${goal.id} is ${goal.phase}.`
        }
        case "clear":
          yield* client.goal.clear({ path })
          return "Goal cleared."
        default:
          return yield* Effect.fail({ message: `unknown /goal command "${verb}": ${Goal.usage}` })
      }
    }).pipe(Effect.mapError((e) =>
      ["GoalError", "GoalReplayError", ""].includes(field(e, "_tag"))
        ? { message: field(e, "message") }
        : failure(url)(e)
    ))
