/**
 * `harness sessions compact`: a manual compaction of a stored session (ADR 0052), where its agent lives (here, or
 * on a server with `--remote`).
 */
import type { Ids, SessionEvent } from "@harness/domain"
import { Effect } from "effect"
import { CommandError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import * as Runtime from "./runtime.js"
import * as Timeline from "./timeline.js"

/** What `sessions compact` did: the record it logged. */
export interface Compacted {
  readonly id: Ids.SessionId
  readonly record: typeof SessionEvent.Compaction.Type
  readonly seq: number
}

/**
 * `sessions compact`: opens the session (taking its writer lease, so a session another process writes is refused,
 * naming the holder), starts a manual compaction (ADR 0052, R149), waits for the agent to be idle, and answers the
 * `compaction` record it logged. A compaction that logged no record (blocked by a hook, or a failed summary
 * request) is a `CommandError` saying how its turn ended.
 */
export const compact = (text: string, settings: Settings, instruction: string | undefined) =>
  Effect.scoped(Effect.gen(function*() {
    const backend = yield* Runtime.Backend
    const id = yield* backend.resolveId(text)
    const opened = yield* backend.open(settings, id)
    const { agent } = yield* opened.start({})
    const before = opened.events.length
    yield* agent.compact(instruction === undefined ? undefined : { instruction }).pipe(
      Effect.mapError((e) =>
        new CommandError({
          reason: "Input",
          message: e._tag === "AgentBusyError"
            ? `session ${id} is busy (a turn is running): compact it when it is idle`
            : `session ${id}: ${e.message}`
        })
      )
    )
    yield* agent.whenIdle
    const added = (yield* agent.log).slice(before)
    const record = added.find((e) => e.type === "compaction")
    if (record?.type === "compaction") return { id, record: record.data, seq: record.seq } satisfies Compacted
    const end = [...added].reverse().find((e) => e.type === "turn/end")
    return yield* new CommandError({
      reason: "TurnFailed",
      message: `session ${id} was not compacted: ${
        end?.type === "turn/end" ? Timeline.describe(end) : "no compaction ran"
      } (harness sessions show ${id} shows the log)`
    })
  }))
