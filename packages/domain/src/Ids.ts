/**
 * Branded identifiers. Ids are opaque strings; the brand keeps a session id from being passed where a message id
 * is expected, and decoding checks that an id is a non-empty string.
 *
 * @since 0.0.0
 */
import { Effect, Schema } from "effect"

const Id = Schema.String.pipe(
  Schema.minLength(1, { message: () => "an id must be a non-empty string" })
)

/**
 * Identifies a session, and the agent that drives it (an agent shares its session's id).
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionId = Id.pipe(Schema.brand("SessionId"))
/**
 * @since 0.0.0
 * @category models
 */
export type SessionId = typeof SessionId.Type

/**
 * Identifies one accepted message. Minted by the agent, or supplied by the caller for idempotent delivery.
 *
 * @since 0.0.0
 * @category schemas
 */
export const AgentMessageId = Id.pipe(Schema.brand("AgentMessageId"))
/**
 * @since 0.0.0
 * @category models
 */
export type AgentMessageId = typeof AgentMessageId.Type

/**
 * Identifies one tool call, as the model named it.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ToolCallId = Id.pipe(Schema.brand("ToolCallId"))
/**
 * @since 0.0.0
 * @category models
 */
export type ToolCallId = typeof ToolCallId.Type

/**
 * A random UUID (version 4 layout) from four 32-bit words of the context's `Random` — the same ids again under a
 * seeded or test `Random` — handed to `make` (an id's brand). One lookup of the service and four draws: nine
 * interpreter steps, where sixteen `Random.nextIntBetween` bytes under `Effect.all` took over sixty.
 *
 * @since 0.0.0
 * @category constructors
 */
export const randomUuid = <A>(make: (uuid: string) => A): Effect.Effect<A> =>
  Effect.randomWith((random) =>
    Effect.flatMap(
      random.nextInt,
      (a) =>
        Effect.flatMap(random.nextInt, (b) =>
          Effect.flatMap(random.nextInt, (c) => Effect.map(random.nextInt, (d) => make(uuidOf(a, b, c, d)))))
    )
  )

/** A 32-bit word as eight hex digits. */
const hex8 = (word: number): string => (word >>> 0).toString(16).padStart(8, "0")

// Four calls, not `[a, b, c, d].map(...)`: no array and no closure per id (one id per accepted message).
const uuidOf = (a: number, b: number, c: number, d: number): string => {
  const hex = hex8(a) + hex8(b) + hex8(c) + hex8(d)
  const variant = ((Number.parseInt(hex[16]!, 16) & 3) | 8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${
    hex.slice(20, 32)
  }`
}
