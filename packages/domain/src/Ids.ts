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
 * seeded or test `Random` — branded as `id` (one of the id schemas above). One lookup of the service and four draws:
 * nine interpreter steps, where sixteen `Random.nextIntBetween` bytes under `Effect.all` took over sixty. A UUID is a
 * non-empty string, so the brand is applied without the schema's check (which cost more than the draws, ADR 0042).
 *
 * @since 0.0.0
 * @category constructors
 */
export const randomUuid = <A>(id: { readonly make: (uuid: string, options: boolean) => A }): Effect.Effect<A> =>
  Effect.randomWith((random) =>
    Effect.flatMap(
      random.nextInt,
      (a) =>
        Effect.flatMap(random.nextInt, (b) =>
          Effect.flatMap(random.nextInt, (c) =>
            Effect.map(random.nextInt, (d) => id.make(uuidOf(a, b, c, d), true))))
    )
  )

/** Each byte as two hex digits. */
const hexByte: ReadonlyArray<string> = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** Byte `shift / 8` (from the right) of a 32-bit word, as two hex digits. */
const hex = (word: number, shift: number): string => hexByte[(word >>> shift) & 0xff]!

// Four words to a version-4 UUID: the version nibble (4) replaces hex digit 12 and the variant bits (10) the top two
// bits of digit 16. A table of bytes, not `toString(16)` and slices: one id per accepted message (ADR 0042).
const uuidOf = (a: number, b: number, c: number, d: number): string =>
  hex(a, 24) + hex(a, 16) + hex(a, 8) + hex(a, 0) + "-" + hex(b, 24) + hex(b, 16) + "-" +
  hexByte[0x40 | ((b >>> 8) & 0x0f)]! + hex(b, 0) + "-" + hexByte[0x80 | ((c >>> 24) & 0x3f)]! + hex(c, 16) + "-" +
  hex(c, 8) + hex(c, 0) + hex(d, 24) + hex(d, 16) + hex(d, 8) + hex(d, 0)
