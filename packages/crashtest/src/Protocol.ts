/**
 * The wire between the crash-test parent and its child: the child's configuration (one JSON argument) and the
 * NDJSON lines the child writes to stdout. Every line is written synchronously before the child goes on, so a line
 * the parent reads describes something that happened before the kill.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { KillKind, KillPoint, Op } from "./Scenario.js"

/**
 * The store a child runs on.
 *
 * @since 0.0.0
 * @category models
 */
export const Backend = Schema.Literal("sqlite", "jsonl")
/** @since 0.0.0 */
export type Backend = typeof Backend.Type

/**
 * What the child is told to do.
 *
 * - `location`: the SQLite database file, or the JSONL directory;
 * - `mode`: `create` a new session, or `resume` the stored one (open, with crash repair, and continue);
 * - `kill`: where to stop and announce the kill point (absent: run to the end and report the census);
 * - `ops`: hand-written ops instead of the seed's.
 *
 * @since 0.0.0
 * @category models
 */
export const ChildConfig = Schema.Struct({
  backend: Backend,
  location: Schema.String,
  sessionId: Schema.String,
  seed: Schema.Int,
  round: Schema.Int.pipe(Schema.nonNegative()),
  mode: Schema.Literal("create", "resume"),
  kill: Schema.optionalWith(KillPoint, { exact: true }),
  /** Ops to run instead of the seed's (a hand-written scenario; the seed still gives the model's replies). */
  ops: Schema.optionalWith(Schema.Array(Op), { exact: true })
})
/** @since 0.0.0 */
export type ChildConfig = typeof ChildConfig.Type

/**
 * One line of the child's report.
 *
 * - `ready`: the store and the agent are up;
 * - `sent`: a send (or resend) returned `id` (`requested` is the id the child asked for);
 * - `durable`: the store acknowledged a commit holding these events (JSON text of each, as committed);
 * - `discarded`: a cancel discarded these message ids (a live `agent/inbox/discard`);
 * - `claimed`: the driver claimed this message id (a live `agent/inbox/dequeue`);
 * - `kill-point`: the child stopped here and waits to be killed;
 * - `done`: the scenario ran to its end; `census` counts every kill kind's occurrences;
 * - `failed`: the child failed (the parent reports it as a failure).
 *
 * @since 0.0.0
 * @category models
 */
export const Line = Schema.Union(
  Schema.TaggedStruct("ready", { turns: Schema.Int, events: Schema.Int }),
  Schema.TaggedStruct("sent", { requested: Schema.String, id: Schema.String, op: Schema.String }),
  Schema.TaggedStruct("durable", { events: Schema.Array(Schema.String) }),
  Schema.TaggedStruct("discarded", { ids: Schema.Array(Schema.String) }),
  Schema.TaggedStruct("claimed", { id: Schema.String }),
  Schema.TaggedStruct("kill-point", { kind: KillKind, n: Schema.Int }),
  Schema.TaggedStruct("done", { census: Schema.Record({ key: KillKind, value: Schema.Int }) }),
  Schema.TaggedStruct("failed", { message: Schema.String })
)
/** @since 0.0.0 */
export type Line = typeof Line.Type

/**
 * Decodes one line of the child's stdout.
 *
 * @since 0.0.0
 * @category decoding
 */
export const decodeLine = Schema.decodeEither(Schema.parseJson(Line))

/**
 * Encodes one line (the child's side).
 *
 * @since 0.0.0
 * @category encoding
 */
export const encodeLine = (line: Line): string => JSON.stringify(Schema.encodeSync(Line)(line))

/**
 * Decodes the child's configuration argument.
 *
 * @since 0.0.0
 * @category decoding
 */
export const decodeConfig = Schema.decodeUnknown(Schema.parseJson(ChildConfig))
