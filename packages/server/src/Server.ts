/**
 * The Harness server: `HarnessApi` served over HTTP. One live agent per session, opened on first use from the
 * `SessionStore` in context and kept until the server's scope ends; every agent operation runs through
 * `Agent.execute`; a session's events stream as Server-Sent Events that resume by seq; bearer tokens with scopes
 * and a rate per token; `/openapi.json` and a docs page (`/docs`) derived from the same definition.
 *
 * @since 0.0.0
 */
import type { LanguageModel } from "@effect/ai"
import type { HttpRouter, HttpServer } from "@effect/platform"
import { HttpApiBuilder, HttpApiSwagger, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import type { Agent } from "@harness/agent"
import { Agent as AgentModule } from "@harness/agent"
import type { Ids } from "@harness/domain"
import { Operations } from "@harness/domain"
import type { Goals } from "@harness/goal"
import { GoalError } from "@harness/goal"
import type { SessionLog } from "@harness/session"
import { Sessions, SessionStore } from "@harness/session"
import { Chunk, Config, ConfigError, Context, Duration, Effect, Either, Layer, Option, Redacted, Stream } from "effect"
import type { Scope as EffectScope } from "effect"
import { createServer } from "node:http"
import { Api, Authentication, Principal, type SessionInfo } from "./HarnessApi.js"
import * as Auth from "./internal/auth.js"
import * as Events from "./internal/events.js"
import * as Page from "./internal/page.js"
import * as Pool from "./internal/pool.js"
import * as ServerError from "./ServerError.js"

/**
 * A token the server accepts: a name (for logs and errors; never the secret), the secret a client sends as
 * `Authorization: Bearer <secret>`, and its scopes.
 *
 * @since 0.0.0
 * @category models
 */
export interface Token extends Auth.Token {}

/**
 * A token bucket per token: `burst` requests at once, refilled at `perSecond` (time from `Clock`).
 *
 * @since 0.0.0
 * @category models
 */
export interface RateLimit extends Auth.RateLimit {}

/**
 * An agent with its goal service: what `makeAgent` answers for the goal routes to act on the session's goal.
 *
 * @since 0.0.0
 * @category models
 */
export interface Hosted extends Pool.Hosted {}

/**
 * How the server builds the agent of a session it opens (in the session's own scope, closed when the server stops
 * or the session is removed): the agent, or a {@link Hosted} agent with its goals (without them the goal routes
 * answer `GoalsUnavailable`).
 *
 * @since 0.0.0
 * @category models
 */
export type MakeAgent<R> = (
  log: SessionLog.Service
) => Effect.Effect<Agent.Service | Hosted, unknown, R | EffectScope.Scope>

/**
 * How a server in front of runners takes the agent of a session (in the session's own scope, closed when the server
 * stops or the session is removed), e.g. `@harness/cluster`'s `ClusterAgent.make`: the agent, or a {@link Hosted}
 * agent with its goals. The server opens no log for it (R247).
 *
 * @since 0.0.0
 * @category models
 */
export type Agents<R> = Pool.Agents<R>

/**
 * The server's options.
 *
 * - `tokens`: the accepted tokens; with none, every request is refused (401).
 * - `makeAgent`: how a session's agent is built (default: `Agent.make({ session })` with the model in context).
 * - `agents`: instead of `makeAgent`, take each session's agent from elsewhere (the server then runs in front of the
 *   runners that host the agents: it opens no session log and takes no lease; sessions are still created, listed and
 *   removed in the `SessionStore` in context, which must be the store the runners write). Give one or the other.
 * - `maxBodyBytes`: the largest request body accepted (default 1 MiB); larger is 413.
 * - `rateLimit`: per token (default 100 at once, 50 a second); `false` turns it off.
 * - `subscriberBuffer`: how many live events an event stream may hold for a slow subscriber before it is ended
 *   with `event: overflow` (default 4096).
 * - `cors`: the origins allowed to call the API from a browser; off (no CORS headers) by default.
 * - `heartbeat`: how often an event stream sends a comment frame (`: heartbeat`) so that a quiet stream is not
 *   closed by a proxy or an idle timer (default 15 seconds, on `Clock`); `false` sends none.
 *
 * @since 0.0.0
 * @category models
 */
export interface Options<R = never> {
  readonly tokens: ReadonlyArray<Token>
  readonly makeAgent?: MakeAgent<R> | undefined
  readonly agents?: Agents<R> | undefined
  readonly maxBodyBytes?: number | undefined
  readonly rateLimit?: RateLimit | false | undefined
  readonly subscriberBuffer?: number | undefined
  readonly cors?: ReadonlyArray<string> | undefined
  readonly heartbeat?: Duration.DurationInput | false | undefined
}

/**
 * Reads tokens from text: entries `name:scope:secret` separated by commas or whitespace, e.g.
 * `web:send:3f9a…,ops:admin:7c1d…`. The secret is everything after the second colon. A scope followed by
 * `@id+id…` grants those sessions only (`kiosk:send@s1+s2:9b2e…`).
 *
 * Contract: a malformed entry, an unknown scope, an empty grant, an empty secret or a repeated name is a `Left`
 * naming the entry's position (never its secret).
 *
 * @since 0.0.0
 * @category constructors
 */
export const parseTokens = (text: Redacted.Redacted): Either.Either<ReadonlyArray<Token>, string> => {
  const entries = Redacted.value(text).split(/[\s,]+/).filter((entry) => entry !== "")
  const tokens: Array<Token> = []
  for (const [index, entry] of entries.entries()) {
    const first = entry.indexOf(":")
    const second = entry.indexOf(":", first + 1)
    const name = entry.slice(0, first)
    const [scope, grant] = entry.slice(first + 1, second).split("@", 2) as [string, string | undefined]
    const secret = entry.slice(second + 1)
    if (first <= 0 || second < 0 || secret === "") {
      return Either.left(`token ${index + 1} is not name:scope:secret`)
    }
    if (scope !== "read" && scope !== "send" && scope !== "admin") {
      return Either.left(`token ${index + 1} (${name}) has scope "${scope}": use read, send or admin`)
    }
    const sessions = grant?.split("+")
    if (sessions !== undefined && sessions.some((id) => id === "")) {
      return Either.left(`token ${index + 1} (${name}) grants an empty session id: use scope@id+id`)
    }
    if (tokens.some((token) => token.name === name)) return Either.left(`token name ${name} is given twice`)
    tokens.push({
      name,
      scopes: [scope],
      secret: Redacted.make(secret),
      ...(sessions === undefined ? {} : { sessions })
    })
  }
  return Either.right(tokens)
}

/**
 * The tokens of `HARNESS_SERVER_TOKENS` (see {@link parseTokens}); none when it is not set.
 *
 * @since 0.0.0
 * @category constructors
 */
export const tokensConfig: Config.Config<ReadonlyArray<Token>> = Config.redacted("HARNESS_SERVER_TOKENS").pipe(
  Config.mapOrFail((text) =>
    Either.mapLeft(
      parseTokens(text),
      (message) => ConfigError.InvalidData([], `${message} (e.g. web:send:<secret>,ops:admin:<secret>)`)
    )
  ),
  Config.withDefault<ReadonlyArray<Token>>([])
)

/** The agents of this server. */
class AgentPool extends Context.Tag("@harness/server/AgentPool")<AgentPool, Pool.Pool>() {}

/**
 * The route's scope, and — for a route on one session (`session`) — the token's grant of it; `"any"` for a route that
 * makes a session (create, fork), which a token granted some sessions only may not use (R244).
 */
const requireScope = (needed: ServerError.Scope, session?: Ids.SessionId | "any") =>
  Effect.flatMap(Principal, (principal) => {
    if (!Auth.grants(principal.scopes, needed)) {
      return Effect.fail(
        new ServerError.Forbidden({
          needed,
          message: `token ${principal.name} lacks the ${needed} scope this route needs`
        })
      )
    }
    if (session === undefined || principal.sessions === undefined) return Effect.void
    if (session === "any") {
      return Effect.fail(
        new ServerError.Forbidden({
          needed,
          message: `token ${principal.name} is granted some sessions only: it cannot make one`
        })
      )
    }
    return Auth.reaches(principal, session) ? Effect.void : Effect.fail(
      new ServerError.Forbidden({
        needed,
        session,
        message: `token ${principal.name} is not granted session ${session}`
      })
    )
  })

const infoOf = (id: Ids.SessionId) =>
  Sessions.list.pipe(
    Effect.mapError((e) => new ServerError.StoreUnavailable({ message: e.message })),
    Effect.flatMap((all) => {
      const info = all.find((session) => session.id === id)
      return info === undefined
        ? Effect.fail(new ServerError.SessionNotFound({ id, message: `no session ${id} is stored` }))
        : Effect.succeed<SessionInfo>(info)
    })
  )

const SessionsLive = (subscriberBuffer: number, heartbeat: Duration.Duration | undefined) =>
  HttpApiBuilder.group(Api, "sessions", (handlers) =>
    Effect.gen(function*() {
      const pool = yield* AgentPool
      const store = yield* SessionStore.SessionStore
      const withStore = Effect.provideService(SessionStore.SessionStore, store)
      return handlers
        .handle("create", ({ payload }) =>
          requireScope("send", "any").pipe(
            Effect.zipRight(pool.create(payload)),
            Effect.flatMap((id) => withStore(infoOf(id)))
          ))
        .handle("list", () =>
          requireScope("read").pipe(
            Effect.zipRight(withStore(Sessions.list)),
            Effect.mapError((e) =>
              e._tag === "SessionLogError" ? new ServerError.StoreUnavailable({ message: e.message }) : e
            ),
            Effect.flatMap((all) =>
              Effect.map(Principal, (principal) => all.filter((s) => Auth.reaches(principal, s.id)))
            )
          ))
        .handle("show", ({ path }) => requireScope("read", path.id).pipe(Effect.zipRight(withStore(infoOf(path.id)))))
        .handle("remove", ({ path }) => requireScope("admin", path.id).pipe(Effect.zipRight(pool.remove(path.id))))
        .handle("fork", ({ path, payload }) =>
          Effect.gen(function*() {
            yield* requireScope("send", "any")
            yield* withStore(infoOf(path.id))
            const child = yield* withStore(Sessions.fork(path.id, payload)).pipe(
              Effect.mapError((e) =>
                e.reason === "fork-boundary"
                  ? new ServerError.ForkRefused({ id: path.id, message: e.message })
                  : /AlreadyExists|exists/.test(e.message) && payload.id !== undefined
                  ? new ServerError.SessionConflict({
                    id: payload.id,
                    reason: "exists",
                    message: `session ${payload.id} exists already`
                  })
                  : new ServerError.StoreUnavailable({ message: `cannot fork session ${path.id}: ${e.message}` })
              )
            )
            return yield* withStore(infoOf(child))
          }))
        .handle("records", ({ path }) =>
          Effect.gen(function*() {
            yield* requireScope("read", path.id)
            yield* withStore(infoOf(path.id))
            const rows = yield* Stream.runCollect(store.load(path.id)).pipe(
              Effect.mapError((e) =>
                e.reason === "NotFound"
                  ? new ServerError.SessionNotFound({ id: path.id, message: `no session ${path.id} is stored` })
                  : new ServerError.StoreUnavailable({ message: `cannot read session ${path.id}: ${e.message}` })
              )
            )
            return Chunk.toReadonlyArray(rows).map((row) => `${row.text}\n`).join("")
          }))
        .handle("snapshot", ({ path, urlParams }) =>
          Effect.gen(function*() {
            yield* requireScope("read", path.id)
            const agent = yield* pool.get(path.id)
            const [log, inbox, status] = yield* Effect.all([agent.log, agent.inbox, agent.status])
            const tail = urlParams.tail ?? 200
            return {
              events: log.slice(-tail),
              inbox,
              status,
              lastSeq: log.length === 0 ? -1 : log[log.length - 1]!.seq
            }
          }))
        .handle("events", ({ headers, path, urlParams }) =>
          Effect.gen(function*() {
            yield* requireScope("read", path.id)
            const agent = yield* pool.get(path.id)
            const after = headers["last-event-id"] ?? urlParams.lastEventId ?? -1
            return HttpServerResponse.stream(Events.stream(agent, after, subscriberBuffer, heartbeat), {
              contentType: "text/event-stream",
              headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
            })
          }))
    }))

const AgentLive = HttpApiBuilder.group(Api, "agent", (handlers) =>
  Effect.gen(function*() {
    const pool = yield* AgentPool
    /** Runs one operation on the session's agent: the route's scope is `send`, `read` for the inbox and receipts. */
    const run = <O extends Operations.Operation>(id: Ids.SessionId, operation: O, needed: ServerError.Scope = "send") =>
      requireScope(needed, id).pipe(
        Effect.zipRight(pool.get(id)),
        Effect.flatMap((agent) => AgentModule.execute(agent)(operation))
      )
    return handlers
      .handle("send", ({ path, payload }) => run(path.id, new Operations.Send(payload, true)))
      .handle("followup", ({ path, payload }) => run(path.id, new Operations.Followup(payload, true)))
      .handle("steer", ({ path, payload }) => run(path.id, new Operations.Steer(payload, true)))
      .handle("inject", ({ path, payload }) => run(path.id, new Operations.Inject(payload, true)))
      .handle("batch", ({ path, payload }) => run(path.id, new Operations.Batch(payload, true)))
      .handle("cancel", ({ path, payload }) => run(path.id, new Operations.Cancel(payload, true)))
      .handle("compact", ({ path, payload }) => run(path.id, new Operations.Compact(payload, true)))
      .handle("withdraw", ({ path, payload }) => run(path.id, new Operations.Withdraw(payload, true)))
      .handle("edit", ({ path, payload }) => run(path.id, new Operations.Edit(payload, true)))
      .handle("move", ({ path, payload }) => run(path.id, new Operations.Move(payload, true)))
      .handle("promote", ({ path, payload }) => run(path.id, new Operations.Promote(payload, true)))
      .handle("demote", ({ path, payload }) => run(path.id, new Operations.Demote(payload, true)))
      .handle("receipt", ({ path, payload }) => run(path.id, new Operations.Receipt(payload, true), "read"))
      .handle("retry", ({ path }) => run(path.id, new Operations.Retry({}, true)))
      .handle("inbox", ({ path }) => run(path.id, new Operations.ListInbox({}, true), "read"))
      .handle("approvals", ({ path }) => run(path.id, new Operations.ListApprovals({}, true), "read"))
      .handle("approve", ({ path, payload }) => run(path.id, new Operations.Approve(payload, true)))
  }))

const GoalLive = HttpApiBuilder.group(Api, "goal", (handlers) =>
  Effect.gen(function*() {
    const pool = yield* AgentPool
    /** The session's goal service, after the route's scope (`read` for the status, `send` for changes). */
    const goalsOf = (id: Ids.SessionId, needed: ServerError.Scope) =>
      requireScope(needed, id).pipe(
        Effect.zipRight(pool.goals(id)),
        Effect.flatMap((goals) =>
          goals === undefined
            ? Effect.fail(
              new ServerError.GoalsUnavailable({
                id,
                message: `the agent of session ${id} has no goal system on this server`
              })
            )
            : Effect.succeed(goals)
        )
      )
    /** The current goal's ref, or `GOAL_NOT_FOUND`. */
    const current = (goals: Goals.Service) =>
      Effect.flatMap(goals.get, (view) =>
        view.goal === undefined
          ? Effect.fail(new GoalError.GoalError({ code: "GOAL_NOT_FOUND", message: "there is no goal" }))
          : Effect.succeed({ id: view.goal.id, revision: view.goal.revision }))
    return handlers
      .handle("status", ({ path }) =>
        Effect.flatMap(goalsOf(path.id, "read"), (goals) =>
          Effect.map(goals.get, (view) => ({
            ...(view.goal === undefined ? {} : { goal: view.goal }),
            roundsStarted: view.roundsStarted,
            activation: view.activation
          }))))
      .handle("set", ({ path, payload }) =>
        Effect.gen(function*() {
          const goals = yield* goalsOf(path.id, "send")
          const view = yield* goals.get
          if (view.goal === undefined || view.goal.phase === "complete") {
            return yield* goals.create(payload)
          }
          return yield* goals.edit({ id: view.goal.id, revision: view.goal.revision }, payload)
        }))
      .handle("pause", ({ path }) =>
        Effect.flatMap(goalsOf(path.id, "send"), (goals) =>
          Effect.flatMap(current(goals), goals.pause)))
      .handle("resume", ({ path }) =>
        Effect.flatMap(goalsOf(path.id, "send"), (goals) =>
          Effect.flatMap(current(goals), goals.resume)))
      .handle("clear", ({ path }) =>
        Effect.flatMap(goalsOf(path.id, "send"), (goals) =>
          Effect.flatMap(current(goals), goals.clear)))
  }))

const AuthenticationLive = (options: {
  readonly tokens: ReadonlyArray<Token>
  readonly maxBodyBytes: number
  readonly rateLimit: RateLimit | false
}) =>
  Layer.effect(
    Authentication,
    Effect.gen(function*() {
      const find = Auth.lookup(options.tokens)
      const limiter = options.rateLimit === false ? undefined : yield* Auth.makeLimiter(options.rateLimit)
      return {
        bearer: (bearer) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const presented = Redacted.value(bearer) !== ""
              ? Redacted.value(bearer)
              : new URL(request.url, "http://localhost").searchParams.get("access_token") ?? ""
            const token = find(presented)
            if (token === undefined) {
              return yield* new ServerError.Unauthorized({
                message: presented === ""
                  ? "this route needs a bearer token (Authorization: Bearer <token>)"
                  : "the bearer token is not one this server accepts"
              })
            }
            if (limiter !== undefined) {
              const wait = yield* limiter.take(token.name)
              if (wait > 0) {
                return yield* new ServerError.TooManyRequests({
                  retryAfterMillis: wait,
                  message: `token ${token.name} is over its rate: retry in ${wait} ms`
                })
              }
            }
            const length = Number(request.headers["content-length"] ?? "0")
            if (length > options.maxBodyBytes) {
              return yield* new ServerError.PayloadTooLarge({
                limit: options.maxBodyBytes,
                message: `the body is ${length} bytes; this server accepts at most ${options.maxBodyBytes}`
              })
            }
            return { name: token.name, scopes: token.scopes, sessions: token.sessions }
          })
      }
    })
  )

/** What the server needs whatever its agents are (beside theirs, and the model when it builds them). */
type Needs = HttpServer.HttpServer | HttpRouter.HttpRouter.DefaultServices | SessionStore.SessionStore

/**
 * The server on the `HttpServer` in context (see {@link layerNode} for Node's): the API, `/openapi.json`, the
 * docs page `/docs`, and a web page at `/` (sessions, a chat that streams, the inbox with drop, cancel).
 *
 * Contract: each session's agent is opened once, on its first request, and holds the session's writer lease until
 * the layer's scope closes (which disposes every agent) or the session is removed; a session another process
 * writes is 409 `SessionConflict { busy }`. Sends with a caller-supplied id are idempotent, across restarts too
 * (the agent's acceptance by id is durable). With `agents` the server runs in front of the runners: a session's agent
 * is taken from `agents` on its first request and kept as above, but no log is opened and no lease taken here (the
 * runner hosting the session holds it); create stores the session's header only, and remove deletes it from the store
 * (refused `busy` while a runner holds its lease) (R247). The routes need a token: `read` for reads and events, `send` for
 * creating sessions and every agent operation, `admin` for removing a session.
 *
 * @since 0.0.0
 * @category layers
 */
export function layer<R = never>(
  options: Options<R> & { readonly agents: Agents<R>; readonly makeAgent?: undefined }
): Layer.Layer<never, never, Needs | Exclude<R, EffectScope.Scope>>
export function layer<R = never>(
  options: Options<R>
): Layer.Layer<never, never, Needs | LanguageModel.LanguageModel | Exclude<R, EffectScope.Scope>>
export function layer<R = never>(
  options: Options<R>
): Layer.Layer<never, never, Needs | LanguageModel.LanguageModel | Exclude<R, EffectScope.Scope>> {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024
  if (options.agents !== undefined && options.makeAgent !== undefined) {
    return Layer.die(
      new Error("Server.layer: give makeAgent (agents hosted here) or agents (taken from elsewhere), not both")
    )
  }
  const source: Pool.Source<R | LanguageModel.LanguageModel> = options.agents !== undefined
    ? { agents: options.agents }
    : { makeAgent: options.makeAgent ?? Pool.defaultAgent }
  const pool = Layer.scoped(AgentPool, Pool.make(source))
  const api = HttpApiBuilder.api(Api).pipe(
    Layer.provide([
      SessionsLive(
        options.subscriberBuffer ?? 4096,
        options.heartbeat === false ? undefined : Duration.decode(options.heartbeat ?? "15 seconds")
      ),
      AgentLive,
      GoalLive
    ]),
    Layer.provide(AuthenticationLive({
      tokens: options.tokens,
      maxBodyBytes,
      rateLimit: options.rateLimit ?? { burst: 100, perSecond: 50 }
    }))
  )
  return HttpApiBuilder.serve((app) =>
    // A declared length over the limit is refused with 413 before the body is read (`Authentication`); a body sent
    // without one is cut off at the limit while it is read (the connection is closed, nothing is accepted).
    HttpServerRequest.withMaxBodySize(app, Option.some(maxBodyBytes))
  ).pipe(
    Layer.provide(HttpApiSwagger.layer({ path: "/docs" })),
    Layer.provide(
      HttpApiBuilder.Router.use((router) =>
        router.get("/", Effect.succeed(HttpServerResponse.text(Page.html, { contentType: "text/html; charset=utf-8" })))
      )
    ),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(
      options.cors === undefined ? Layer.empty : HttpApiBuilder.middlewareCors({
        allowedOrigins: options.cors,
        allowedHeaders: ["authorization", "content-type", "last-event-id"]
      })
    ),
    Layer.provide(api),
    Layer.provide(pool)
  )
}

/**
 * Node's HTTP server on `host` (default `127.0.0.1`: loopback only) and `port` (default 0: any free port; the
 * bound address is `HttpServer.HttpServer`'s `address`).
 *
 * @since 0.0.0
 * @category layers
 */
export const layerNode = (options?: { readonly port?: number | undefined; readonly host?: string | undefined }) =>
  NodeHttpServer.layer(createServer, { port: options?.port ?? 0, host: options?.host ?? "127.0.0.1" })
