/**
 * The refusals of the HTTP API that are not the agent's own: no or unknown token, a token without the scope a route
 * needs, a body over the limit, a token over its rate, a session that does not exist or that another process
 * writes. Each is a schema carrying its HTTP status, so the OpenAPI document lists it; it is sent as problem details
 * (`application/problem+json`, RFC 9457) and the typed client decodes it back into the same class.
 *
 * @since 0.0.0
 */
import { Ids } from "@harness/domain"
import { Predicate, Schema } from "effect"
import { problem } from "./internal/problem.js"

/**
 * The mark every member of {@link ServerError} carries, as `@effect/ai`'s `AiError.TypeId` marks an `AiError`; it
 * sits on each member's prototype, so the error's fields, its problem details and its JSON are unchanged (ADR 0074).
 *
 * @since 0.0.0
 * @category symbols
 */
export const TypeId = "~@harness/server/ServerError"

/**
 * What a token may do. `read` lists and shows sessions, their inbox, snapshot and events; `send` also creates
 * sessions and runs every agent operation; `admin` also removes sessions. Each scope includes the ones before it.
 *
 * @since 0.0.0
 * @category schemas
 */
export const Scope = Schema.Literal("read", "send", "admin")
/**
 * @since 0.0.0
 * @category models
 */
export type Scope = typeof Scope.Type

/**
 * A refusal's class: a `Schema.TaggedError` tagged `tag` (identifier `@harness/server/<tag>`) with `fields` and a
 * `message`, sent as problem details with the HTTP `status` (and `description`, for the OpenAPI document).
 */
const refusal = <Self>() =>
<Tag extends string, Fields extends Schema.Struct.Fields>(
  tag: Tag,
  fields: Fields,
  http: { readonly status: number; readonly description: string }
) => Schema.TaggedError<Self>(`@harness/server/${tag}`)(tag, { ...fields, message: Schema.String }, problem(http))

/**
 * 401: the request has no bearer token, or one the server does not know.
 *
 * @since 0.0.0
 * @category errors
 */
export class Unauthorized extends refusal<Unauthorized>()(
  "Unauthorized",
  {},
  { status: 401, description: "No bearer token, or an unknown one." }
) {}

/**
 * 403: the token is known but lacks the scope the route needs (`needed`), or is granted other sessions only (`session`).
 *
 * @since 0.0.0
 * @category errors
 */
export class Forbidden extends refusal<Forbidden>()(
  "Forbidden",
  {
    needed: Scope,
    /** Set when the scope is there but the token is granted other sessions only. */
    session: Schema.optionalWith(Ids.SessionId, { exact: true })
  },
  {
    status: 403,
    description: "The token lacks the scope this route needs, or is not granted this session (`session`)."
  }
) {}

/**
 * 413: the request body is larger than the server's limit (`limit`, in bytes).
 *
 * @since 0.0.0
 * @category errors
 */
export class PayloadTooLarge extends refusal<PayloadTooLarge>()(
  "PayloadTooLarge",
  { limit: Schema.Number },
  { status: 413, description: "The request body is over the server's limit." }
) {}

/**
 * 429: the token made more requests than its rate allows; `retryAfterMillis` says when one more will be accepted.
 *
 * @since 0.0.0
 * @category errors
 */
export class TooManyRequests extends refusal<TooManyRequests>()(
  "TooManyRequests",
  { retryAfterMillis: Schema.Number },
  { status: 429, description: "The token is over its request rate." }
) {}

/**
 * 404: no session with this id is stored.
 *
 * @since 0.0.0
 * @category errors
 */
export class SessionNotFound extends refusal<SessionNotFound>()(
  "SessionNotFound",
  { id: Schema.String },
  { status: 404, description: "No session with this id is stored." }
) {}

/**
 * 409: the session cannot be opened or created here: another live process writes it (its lease, ADR 0044), or a
 * session with the id to create exists already. `reason` says which.
 *
 * @since 0.0.0
 * @category errors
 */
export class SessionConflict extends refusal<SessionConflict>()(
  "SessionConflict",
  { id: Ids.SessionId, reason: Schema.Literal("busy", "exists") },
  { status: 409, description: "Another process writes the session, or it exists." }
) {}

/**
 * 503: the session store failed (the message says how); the request may be retried.
 *
 * @since 0.0.0
 * @category errors
 */
export class StoreUnavailable extends refusal<StoreUnavailable>()(
  "StoreUnavailable",
  {},
  { status: 503, description: "The session store failed." }
) {}

/**
 * Every refusal of this package.
 *
 * @since 0.0.0
 * @category errors
 */
export type ServerError =
  | Unauthorized
  | Forbidden
  | PayloadTooLarge
  | TooManyRequests
  | SessionNotFound
  | SessionConflict
  | StoreUnavailable
  | ForkRefused
  | GoalsUnavailable

/**
 * 400: a fork the source cannot give: `at` is not a turn boundary (or the source has none), so nothing was created.
 *
 * @since 0.0.0
 * @category errors
 */
export class ForkRefused extends refusal<ForkRefused>()(
  "ForkRefused",
  { id: Ids.SessionId },
  { status: 400, description: "The fork point is not a turn boundary of the source." }
) {}

/**
 * 404: the session's agent has no goal system (the server was made without one), so the goal routes have nothing
 * to act on.
 *
 * @since 0.0.0
 * @category errors
 */
export class GoalsUnavailable extends refusal<GoalsUnavailable>()(
  "GoalsUnavailable",
  { id: Ids.SessionId },
  { status: 404, description: "This server's agents have no goal system." }
) {}

/**
 * The schema of {@link ServerError}.
 *
 * @since 0.0.0
 * @category errors
 */
export const ServerError: Schema.Union<
  [
    typeof Unauthorized,
    typeof Forbidden,
    typeof PayloadTooLarge,
    typeof TooManyRequests,
    typeof SessionNotFound,
    typeof SessionConflict,
    typeof StoreUnavailable,
    typeof ForkRefused,
    typeof GoalsUnavailable
  ]
> = Schema.Union(
  Unauthorized,
  Forbidden,
  PayloadTooLarge,
  TooManyRequests,
  SessionNotFound,
  SessionConflict,
  StoreUnavailable,
  ForkRefused,
  GoalsUnavailable
)

/**
 * Whether `u` is one of this package's refusals.
 *
 * @since 0.0.0
 * @category guards
 */
export const isServerError = (u: unknown): u is ServerError => Predicate.hasProperty(u, TypeId)

// Every member carries the mark: a member added to the union is marked with it.
for (const member of ServerError.members) Object.defineProperty(member.prototype, TypeId, { value: TypeId })
