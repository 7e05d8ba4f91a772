/**
 * The HTTP API of a Harness server, as one `HttpApi` definition: the server (`Server`), the typed client (`Client`)
 * and the OpenAPI document (`/openapi.json`) are all derived from it. Every agent operation's route is derived from
 * that operation's `Schema.TaggedRequest` in `@harness/domain`'s `Operations` — its payload is the request's fields,
 * its success and failure are the request's own schemas — so the wire carries exactly what `Agent.execute` takes
 * and answers.
 *
 * @since 0.0.0
 */
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { AgentEvent, Ids, Inbox, Operations, SessionEvent, Store } from "@harness/domain"
import { GoalError, GoalReplay, GoalState } from "@harness/goal"
import { Context, Schema } from "effect"
import * as AST from "effect/SchemaAST"
import { problem } from "./internal/problem.js"
import * as ServerError from "./ServerError.js"

/**
 * One stored session as the API shows it (the store's summary of it).
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionInfo = Schema.Struct({
  id: Ids.SessionId,
  createdAt: Schema.Number,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  parent: Schema.optionalWith(Store.SessionParent, { exact: true }),
  turns: Schema.Number,
  events: Schema.Number,
  lastActivity: Schema.Number,
  bytes: Schema.Number
}).annotations({ identifier: "SessionInfo" })
/**
 * @since 0.0.0
 * @category models
 */
export type SessionInfo = typeof SessionInfo.Type

/**
 * The body of `POST /sessions`: an optional id (a random UUID when absent) and title.
 *
 * @since 0.0.0
 * @category schemas
 */
export const CreateSession = Schema.Struct({
  id: Schema.optionalWith(Ids.SessionId, { exact: true }),
  title: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "CreateSession" })
/**
 * @since 0.0.0
 * @category models
 */
export type CreateSession = typeof CreateSession.Type

/**
 * The body of `POST /sessions/:id/fork`: `Sessions.fork`'s options — the `seq` of the source's `turn/end` to fork at
 * (default: its last), the new session's id (default: a random UUID) and title.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ForkSession = Schema.Struct({
  at: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { exact: true }),
  id: Schema.optionalWith(Ids.SessionId, { exact: true }),
  title: Schema.optionalWith(Schema.String, { exact: true })
}).annotations({ identifier: "ForkSession" })
/**
 * @since 0.0.0
 * @category models
 */
export type ForkSession = typeof ForkSession.Type

/**
 * What a reconnecting client needs in one request: the last durable events (`tail` of them), the pending inbox,
 * the agent's status, and `lastSeq` (the seq of the last durable event, -1 for an empty log), from which the event
 * stream can be resumed with `Last-Event-ID`.
 *
 * Contract: read after subscribing nothing, so it is a picture of one moment: events after `lastSeq` come from
 * `GET /sessions/:id/events` with `Last-Event-ID: lastSeq`, with no gap and no duplicate.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Snapshot = Schema.Struct({
  events: Schema.Array(SessionEvent.SessionEvent),
  inbox: Schema.Array(Inbox.InboxItem),
  status: AgentEvent.AgentStatus,
  lastSeq: Schema.Int
}).annotations({ identifier: "Snapshot" })
/**
 * @since 0.0.0
 * @category models
 */
export type Snapshot = typeof Snapshot.Type

/**
 * Who made the request: the name of the token it carried, its scopes and, for a token granted some sessions only,
 * those sessions (`Authentication` provides it).
 *
 * @since 0.0.0
 * @category services
 */
export class Principal extends Context.Tag("@harness/server/Principal")<Principal, {
  readonly name: string
  readonly scopes: ReadonlyArray<ServerError.Scope>
  readonly sessions?: ReadonlyArray<string> | undefined
}>() {}

/**
 * The bearer-token check every route of the API runs first: the token (the `Authorization: Bearer` header, or the
 * `access_token` query parameter for clients that cannot set headers, as a browser's `EventSource`), its rate, and
 * the request body's declared size.
 *
 * @since 0.0.0
 * @category services
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("@harness/server/Authentication", {
  failure: Schema.Union(ServerError.Unauthorized, ServerError.TooManyRequests, ServerError.PayloadTooLarge),
  provides: Principal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * The agent errors' HTTP statuses: a caller's mistake is 400, a state the request cannot apply to is 409, the log
 * refusing an append is 500. Keyed by the error's tag.
 */
const statuses: Record<string, number> = {
  InvalidMessageError: 400,
  AgentBusyError: 409,
  AgentDisposedError: 409,
  SessionLogError: 500,
  BatchError: 500,
  InboxChangeError: 409,
  TurnRunningError: 409,
  InboxFullError: 429,
  ApprovalError: 409
}

const tagOf = (ast: AST.AST): string | undefined => {
  // A `Schema.TaggedError` class is a transformation from its fields (`from`) to the class (`to`, a declaration).
  const target = AST.isTransformation(ast) ? (AST.isTypeLiteral(ast.to) ? ast.to : ast.from) : ast
  if (!AST.isTypeLiteral(target)) return undefined
  const tag = target.propertySignatures.find((ps) => ps.name === "_tag")
  return tag !== undefined && AST.isLiteral(tag.type) && typeof tag.type.literal === "string"
    ? tag.type.literal
    : undefined
}

/** The failure schema with each member annotated with its status (an unknown member stays 500), as problem details. */
const withStatus = <S extends Schema.Schema.Any>(
  failure: S
): Schema.Schema<Schema.Schema.Type<S>, Schema.Schema.Encoded<S>, Schema.Schema.Context<S>> => {
  const annotate = (member: AST.AST): AST.AST => {
    const status = statuses[tagOf(member) ?? ""]
    return AST.annotations(member, problem({ status }))
  }
  const ast = failure.ast
  return Schema.make(AST.isUnion(ast) ? AST.Union.make(ast.types.map(annotate)) : annotate(ast))
}

const SessionPath = Schema.Struct({ id: Ids.SessionId })

/** A request's fields without its `_tag`: what the route's body carries. */
const payloadOf = <Fields extends Schema.Struct.Fields>(fields: Fields): Schema.Struct<Omit<Fields, "_tag">> => {
  const { _tag: _, ...payload } = fields
  return Schema.Struct(payload)
}

/**
 * An operation's route: `POST /sessions/:id/<path>` (or `GET` for one without a payload that changes nothing),
 * whose payload is the request's fields without its `_tag`, whose success and failure are the request's schemas.
 */
const operation = <
  const Name extends string,
  Self,
  Tag extends string,
  Fields extends Schema.Struct.Fields,
  Success extends Schema.Schema.Any,
  Failure extends Schema.Schema.Any
>(
  name: Name,
  op: Schema.TaggedRequestClass<Self, Tag, Fields, Success, Failure>
) =>
  HttpApiEndpoint.post(name, `/sessions/:id/${name}`)
    .setPath(SessionPath)
    .setPayload(payloadOf(op.fields))
    .addSuccess(op.success)
    .addError(withStatus(op.failure))

/**
 * Every agent operation, one route each, derived from `Operations`. `inbox` is `GET /sessions/:id/inbox` and
 * `approvals` `GET /sessions/:id/approvals`; `retry` takes no body. `awaitReceipt` has no route: a client waits on the event stream and asks `receipt` again.
 *
 * @since 0.0.0
 * @category groups
 */
export class AgentGroup extends HttpApiGroup.make("agent")
  .add(operation("send", Operations.Send))
  .add(operation("followup", Operations.Followup))
  .add(operation("steer", Operations.Steer))
  .add(operation("inject", Operations.Inject))
  .add(operation("batch", Operations.Batch))
  .add(operation("cancel", Operations.Cancel))
  .add(operation("compact", Operations.Compact))
  .add(operation("withdraw", Operations.Withdraw))
  .add(operation("edit", Operations.Edit))
  .add(operation("move", Operations.Move))
  .add(operation("promote", Operations.Promote))
  .add(operation("demote", Operations.Demote))
  .add(operation("receipt", Operations.Receipt))
  .add(operation("approve", Operations.Approve))
  .add(
    HttpApiEndpoint.post("retry", "/sessions/:id/retry")
      .setPath(SessionPath)
      .addSuccess(Operations.Retry.success)
      .addError(withStatus(Operations.Retry.failure))
  )
  .add(
    HttpApiEndpoint.get("inbox", "/sessions/:id/inbox")
      .setPath(SessionPath)
      .addSuccess(Operations.ListInbox.success)
  )
  .add(
    HttpApiEndpoint.get("approvals", "/sessions/:id/approvals")
      .setPath(SessionPath)
      .addSuccess(Operations.ListApprovals.success)
  )
  .middleware(Authentication)
{}

/**
 * The `Last-Event-ID` of an event stream: the header (what a reconnecting `EventSource` sends), or the
 * `lastEventId` query parameter (for the first connection of a client that already holds a seq).
 */
const LastEventId = Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(-1))

/**
 * The sessions: create, list, show, remove, fork, and a session's stored records, snapshot and event stream.
 *
 * @since 0.0.0
 * @category groups
 */
export class SessionsGroup extends HttpApiGroup.make("sessions")
  .add(
    HttpApiEndpoint.post("create", "/sessions")
      .setPayload(CreateSession)
      .addSuccess(SessionInfo, { status: 201 })
  )
  .add(HttpApiEndpoint.get("list", "/sessions").addSuccess(Schema.Array(SessionInfo)))
  .add(HttpApiEndpoint.get("show", "/sessions/:id").setPath(SessionPath).addSuccess(SessionInfo))
  .add(HttpApiEndpoint.del("remove", "/sessions/:id").setPath(SessionPath))
  .add(
    HttpApiEndpoint.post("fork", "/sessions/:id/fork")
      .setPath(SessionPath)
      .setPayload(ForkSession)
      .addSuccess(SessionInfo, { status: 201 })
      .addError(ServerError.ForkRefused)
  )
  .add(
    HttpApiEndpoint.get("records", "/sessions/:id/records")
      .setPath(SessionPath)
      .addSuccess(HttpApiSchema.Text({ contentType: "application/x-ndjson" }))
      .annotate(
        OpenApi.Description,
        "The session's stored records (its events and inbox records) as JSON Lines, exactly as the store holds them: " +
          "what `harness sessions export` writes. Read without opening the session's agent or taking its lease."
      )
  )
  .add(
    HttpApiEndpoint.get("snapshot", "/sessions/:id/snapshot")
      .setPath(SessionPath)
      .setUrlParams(
        Schema.Struct({ tail: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.positive())) })
      )
      .addSuccess(Snapshot)
  )
  .add(
    HttpApiEndpoint.get("events", "/sessions/:id/events")
      .setPath(SessionPath)
      .setUrlParams(Schema.Struct({ lastEventId: Schema.optional(LastEventId) }))
      .setHeaders(Schema.Struct({ "last-event-id": Schema.optional(LastEventId) }))
      .addSuccess(HttpApiSchema.Text({ contentType: "text/event-stream" }))
      .annotate(
        OpenApi.Description,
        "Server-Sent Events. A durable event is `id: <seq>` and `data: <SessionEvent JSON>` (the default event type); " +
          "a live-only event (status, inbox, settled, error) is `event: live` with `data: <AgentEvent JSON>` and no " +
          "id; a subscriber that falls behind its buffer gets `event: overflow` and the stream ends: reconnect with " +
          "`Last-Event-ID` (header) or `?lastEventId=`, and the stream resumes after that seq with no gap and no " +
          "duplicate."
      )
  )
  .middleware(Authentication)
{}

/**
 * A session's goal as `GET /sessions/:id/goal` shows it: the goal (absent when there is none or it was cleared),
 * the rounds started, and whether its rounds run (`armed`) or wait for a human's resume (`disarmed`).
 *
 * @since 0.0.0
 * @category schemas
 */
export const GoalStatus = Schema.Struct({
  goal: Schema.optionalWith(GoalState.Goal, { exact: true }),
  roundsStarted: Schema.Int,
  activation: Schema.Literal("armed", "disarmed")
}).annotations({ identifier: "GoalStatus" })
/**
 * @since 0.0.0
 * @category models
 */
export type GoalStatus = typeof GoalStatus.Type

/**
 * The body of `PUT /sessions/:id/goal`: the objective, and optionally the round cap and token budget of a new goal.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SetGoal = Schema.Struct({
  objective: Schema.String,
  maxGoalRounds: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  maxTokens: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true })
}).annotations({ identifier: "SetGoal" })
/**
 * @since 0.0.0
 * @category models
 */
export type SetGoal = typeof SetGoal.Type

/** The goal service's failures: a refused change is 400 (`GoalError`), a log it cannot fold 500. */
const goalFailure = Schema.Union(
  GoalError.GoalError.annotations(problem({ status: 400 })),
  GoalReplay.GoalReplayError.annotations(problem({ status: 500 })),
  ServerError.GoalsUnavailable
)

/**
 * A session's goal (`@harness/goal`'s service): its status, set (create, or change the objective of the unfinished
 * goal there is), pause, resume and clear — what the chat's `/goal` does.
 *
 * @since 0.0.0
 * @category groups
 */
export class GoalGroup extends HttpApiGroup.make("goal")
  .add(
    HttpApiEndpoint.get("status", "/sessions/:id/goal").setPath(SessionPath).addSuccess(GoalStatus).addError(
      goalFailure
    )
  )
  .add(
    HttpApiEndpoint.put("set", "/sessions/:id/goal")
      .setPath(SessionPath)
      .setPayload(SetGoal)
      .addSuccess(GoalState.Goal)
      .addError(goalFailure)
  )
  .add(
    HttpApiEndpoint.post("pause", "/sessions/:id/goal/pause").setPath(SessionPath).addSuccess(GoalState.Goal)
      .addError(goalFailure)
  )
  .add(
    HttpApiEndpoint.post("resume", "/sessions/:id/goal/resume").setPath(SessionPath).addSuccess(GoalState.Goal)
      .addError(goalFailure)
  )
  .add(HttpApiEndpoint.del("clear", "/sessions/:id/goal").setPath(SessionPath).addError(goalFailure))
  .middleware(Authentication)
{}

/**
 * The whole API: sessions and agent operations behind `Authentication`, with the refusals every route can answer
 * (401, 403, 404, 409, 413, 429, 503).
 *
 * @since 0.0.0
 * @category api
 */
export class Api extends HttpApi.make("harness")
  .add(SessionsGroup)
  .add(AgentGroup)
  .add(GoalGroup)
  .addError(ServerError.Forbidden)
  .addError(ServerError.SessionNotFound)
  .addError(ServerError.SessionConflict)
  .addError(ServerError.StoreUnavailable)
  .annotate(OpenApi.Title, "Harness")
{}
