/**
 * What an activity is — an admission and its turn, or a retry turn: its job, its progress, its tool calls and how
 * it ends. The lifecycle (`lifecycle.ts`) holds the current one; the state (`state.ts`) holds the lifecycle.
 */
import type { AgentEvent, Message, SessionEvent, Turn } from "@harness/domain"
import type { Fiber, Ref, Tracer } from "effect"
import type { OutboxKey, QueuedItem } from "./inbox.js"

/** What one activity (an admission and its turn, or a retry turn) has done so far; read by the driver. */
export interface Progress {
  /** The committed turn number, once `turn/start` is in the log. */
  readonly turn: number | undefined
  /** The current step counter (0 before the first step). */
  readonly step: number
  /** The `turn/end` reason once written by the turn itself. */
  readonly ended: Turn.TurnEndReason | undefined
  /** Whether any step of this turn finished with `max-tokens`. */
  readonly maxTokens: boolean
}

/** A call whose handler finished, with what its result owes the turn. */
export interface FinishedCall {
  readonly data: SessionEvent.SessionEventInputOf<"tool/result">["data"]
  readonly concludes: boolean
  readonly contexts: ReadonlyArray<Message.UserMessageData>
}

/**
 * The tool calls of the current turn: what finished but is not yet committed, and which calls were dispatched. The
 * running handlers themselves are in `live.ts`'s `Handlers`. Plain bookkeeping, changed in synchronous steps (a
 * call recorded as finished and its commit, a call marked dispatched and its fork) and read by the close once every
 * handler has stopped.
 */
export interface ToolRuntime {
  readonly finished: Map<string, FinishedCall>
  readonly dispatched: Set<string>
}

/** What the activity fiber returns when it ends on its own. */
export type ActivityResult =
  | { readonly _tag: "NoTurn" }
  | { readonly _tag: "Ended"; readonly retry: boolean }

/** A job for an activity. */
export type Job =
  | {
    readonly _tag: "prompt"
    readonly item: QueuedItem
    /** The staged items at the claim: retained input, logged before the prompt (those accepted later go after it). */
    readonly retained: ReadonlySet<OutboxKey>
  }
  /**
   * A turn for steering stranded by a cancelled or failed activity (ADR 0009, R56): its trigger is the first
   * steering item's source; the opening drain logs the outbox.
   */
  | { readonly _tag: "steering"; readonly source: Message.AgentMessage["source"] }
  /** `agent.compact` (ADR 0052): a compaction turn, if `beforeCompact` allows it. */
  | { readonly _tag: "compaction"; readonly instruction: string | undefined }
  | {
    readonly _tag: "retry"
    /**
     * The failed turn this retry follows, not yet settled (only the last turn of a retry chain settles, R57): if
     * the retry never opens a turn (a cancel, a refused `turn/start`), that turn is the last and settles then.
     */
    readonly unsettled?: { readonly turn: number; readonly reason: Turn.TurnEndReason } | undefined
  }

/**
 * The current activity. Its fiber, job, progress and tools are fixed when it starts; `window`, `cause` and
 * `logContextOnClose` change with it (a new value swapped into the lifecycle, see `lifecycle.ts`).
 */
export interface Activity {
  readonly job: Job
  readonly fiber: Fiber.RuntimeFiber<ActivityResult, unknown>
  readonly progress: Ref.Ref<Progress>
  readonly tools: ToolRuntime
  /** `acceptsNextStep`: open from the activity's start (before its admission, R35) until its turn ends (R57). */
  readonly window: boolean
  /** The first cancel cause recorded for this activity. */
  readonly cause: AgentEvent.InterruptReason | undefined
  /** A default cancel hit this activity: staged context is logged when it closes. */
  readonly logContextOnClose: boolean
  /** The activity's `Agent.turn` span, ended once the driver has settled it (ADR 0024); none when untraced. */
  readonly span: Tracer.Span | undefined
}
