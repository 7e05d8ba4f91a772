/**
 * The durable vocabulary of session stores, beside the events themselves: the header a session is created with,
 * the summary a store keeps up to date for listing, and the inbox records that make accepted-but-unclaimed
 * messages survive the process. Stores write these as JSON; like `SessionEvent`, none of these schemas has a
 * transformation, so a value's type form is its encoded form and `JSON.stringify` is its encoding.
 *
 * The pure helpers at the end (`messageIdOf`, `promptPreviewOf`) are the facts every backend derives from a record
 * when it stores it, computed in one place so all backends agree.
 *
 * @since 0.0.0
 */
import { Schema } from "effect"
import { joinText } from "./Content.js"
import { AgentMessageId, SessionId, ToolCallId } from "./Ids.js"
import { NonNegativeInt, PositiveInt } from "./Json.js"
import { AgentMessage, InboxPlacement, UserMessageData } from "./Message.js"
import type { SessionEvent } from "./SessionEvent.js"

const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** An inbox record: its `type` (also its schema's identifier), its `time` (epoch milliseconds), then `fields`. */
const inboxRecord = <T extends string, F extends Schema.Struct.Fields>(type: T, fields: F) =>
  Schema.Struct({ type: Schema.Literal(type), time: NonNegativeInt, ...fields }).annotations({ identifier: type })

/**
 * Where a fork came from: the parent session and the `seq` of the `turn/end` it forked at (R112).
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionParent = Schema.Struct({ id: SessionId, seq: NonNegativeInt }).annotations({
  identifier: "SessionParent"
})
/**
 * @since 0.0.0
 * @category models
 */
export type SessionParent = typeof SessionParent.Type

/**
 * A session's header, written once, when the session is created. `version` is the storage format's version;
 * `createdAt` is epoch milliseconds from `Clock`.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionHeader = Schema.Struct({
  id: SessionId,
  version: Schema.Literal(1),
  createdAt: NonNegativeInt,
  parent: optional(SessionParent),
  title: optional(Schema.String)
}).annotations({ identifier: "SessionHeader" })
/**
 * @since 0.0.0
 * @category models
 */
export type SessionHeader = typeof SessionHeader.Type

/**
 * A stored session the store cannot list (its header, or its file's framing, does not decode): its `id` as the
 * store names it (so `remove` can delete it) and what is wrong.
 *
 * @since 0.0.0
 * @category schemas
 */
export const DamagedSession = Schema.Struct({ id: SessionId, problem: Schema.String }).annotations({
  identifier: "DamagedSession"
})
/**
 * @since 0.0.0
 * @category models
 */
export type DamagedSession = typeof DamagedSession.Type

/**
 * Who holds a session's writer lease (ADR 0044): the process (`pid` on `host`) and since when (epoch ms). A second
 * writer is told this when the store refuses it (`SessionStoreError` `Busy`, `SessionLogError` `busy`).
 *
 * @since 0.0.0
 * @category schemas
 */
export const LeaseHolder = Schema.Struct({
  pid: NonNegativeInt,
  host: Schema.String,
  since: NonNegativeInt
}).annotations({ identifier: "LeaseHolder" })
/**
 * @since 0.0.0
 * @category models
 */
export type LeaseHolder = typeof LeaseHolder.Type

/**
 * A lease holder as a person reads it: `process 4242 on host "build-7" since 2026-12-06T19:20:46.000Z`.
 *
 * @since 0.0.0
 * @category utils
 */
export const describeHolder = (holder: LeaseHolder): string =>
  `process ${holder.pid} on host ${JSON.stringify(holder.host)} since ${new Date(holder.since).toISOString()}`

/**
 * What a store's `list` returns for one session: its header and figures the store keeps up to date at each
 * append (never computed by reading the whole session at list time).
 *
 * - `events`: stored events; `turns`: stored `turn/start` events.
 * - `lastActivity`: the `time` of the last stored record (event or inbox record), else `createdAt`.
 * - `bytes`: the stored size of the session as its backend counts it (the file for JSONL, the record texts for SQL
 *   backends); only comparable within one backend.
 * - `firstPrompt`: the {@link promptPreviewOf} of the first stored human prompt.
 *
 * @since 0.0.0
 * @category schemas
 */
export const SessionSummary = Schema.Struct({
  header: SessionHeader,
  events: NonNegativeInt,
  turns: NonNegativeInt,
  lastActivity: NonNegativeInt,
  bytes: NonNegativeInt,
  firstPrompt: optional(Schema.String)
}).annotations({ identifier: "SessionSummary" })
/**
 * @since 0.0.0
 * @category models
 */
export type SessionSummary = typeof SessionSummary.Type

/**
 * Where an accepted message went: a FIFO (`queued`, `steering`) or straight into the log as context (`context`,
 * recorded when acceptance and logging are not one commit).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxRecordPlacement = Schema.Literal("queued", "steering", "context")
/**
 * @since 0.0.0
 * @category models
 */
export type InboxRecordPlacement = typeof InboxRecordPlacement.Type

/**
 * How an accepted message left the inbox: `claimed` (a turn took it as its prompt), `drained` (it joined an open
 * turn as steering), `logged` (it was written as context), `discarded` (a cancel dropped it), `withdrawn` (the
 * sender took it back).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxFate = Schema.Literal("claimed", "drained", "logged", "discarded", "withdrawn")
/**
 * @since 0.0.0
 * @category models
 */
export type InboxFate = typeof InboxFate.Type

/**
 * A message was accepted: the frozen message, where it went, and whether it was a waking send; since ADR 0059 also
 * when it expires (`expiresAt`, epoch milliseconds) and the key it was sent under (`supersedes`), when the send said so.
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxAccepted = inboxRecord("inbox/accepted", {
  message: AgentMessage,
  placement: InboxRecordPlacement,
  wakeup: Schema.Boolean,
  expiresAt: optional(NonNegativeInt),
  supersedes: optional(Schema.NonEmptyString)
})
/**
 * @since 0.0.0
 * @category models
 */
export type InboxAccepted = typeof InboxAccepted.Type

/**
 * Why an accepted message left the inbox without reaching the log, where that is known: the cancel's cause (`user`,
 * `parent`) for a discard or a cancelled admission, `refused` for an admission that opened no turn (blocked by the
 * `promptSubmit` hook, or the hook failed), `overflow` for a discard by a bounded inbox (`maxPending`), `expired`
 * for a message whose `ttl` ran out before a turn took it, `superseded` for one a later send with the same key
 * replaced (ADR 0059).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxSettleCause = Schema.Literal("user", "parent", "refused", "overflow", "expired", "superseded")
/**
 * @since 0.0.0
 * @category models
 */
export type InboxSettleCause = typeof InboxSettleCause.Type

/**
 * An accepted message left the inbox, and how (and, since ADR 0050, why: `cause`; absent in older records). `by`
 * names the message that superseded it (cause `superseded`, ADR 0059).
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxSettled = inboxRecord("inbox/settled", {
  id: AgentMessageId,
  fate: InboxFate,
  cause: optional(InboxSettleCause),
  by: optional(AgentMessageId)
})
/**
 * @since 0.0.0
 * @category models
 */
export type InboxSettled = typeof InboxSettled.Type

/**
 * How a pending message was changed in place (`edit`, `move`, `promote`, `demote`): `edit` replaces its content and
 * source (its id and position stay); `move` puts it just before the pending item `before`, or last when `before` is
 * absent; `place` gives it a new placement (`steering` for `promote`, `queued` for `demote`) and puts it last.
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxRevision = Schema.Union(
  Schema.TaggedStruct("edit", {
    content: UserMessageData.fields.content,
    source: UserMessageData.fields.source
  }),
  Schema.TaggedStruct("move", { before: optional(AgentMessageId) }),
  Schema.TaggedStruct("place", { placement: InboxPlacement })
).annotations({ identifier: "InboxRevision" })
/**
 * @since 0.0.0
 * @category models
 */
export type InboxRevision = typeof InboxRevision.Type

/**
 * A pending message was changed in place: its id and the change. A record for an id that is no longer pending
 * changes nothing.
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxRevised = inboxRecord("inbox/revised", {
  id: AgentMessageId,
  change: InboxRevision
})
/**
 * @since 0.0.0
 * @category models
 */
export type InboxRevised = typeof InboxRevised.Type

/**
 * The pending inbox after one more inbox record (ADR 0017, ADR 0050), in place: `accepted` adds the item, `settled`
 * removes it, `revised` changes it (an edit keeps its position; a move or a new placement re-inserts it). `pending`
 * is keyed by message id in pending order (a `Map` keeps insertion order). Every reader of stored records folds
 * the inbox with this one function, so they agree.
 *
 * @since 0.0.0
 * @category utils
 */
export const foldPending = (pending: Map<string, InboxAccepted>, record: InboxRecord): void => {
  switch (record.type) {
    case "inbox/accepted":
      pending.set(record.message.id, record)
      return
    case "inbox/settled":
      pending.delete(record.id)
      return
    case "inbox/revised": {
      const item = pending.get(record.id)
      if (item === undefined) return
      const change = record.change
      if (change._tag === "edit") {
        pending.set(record.id, {
          ...item,
          message: { content: change.content, id: item.message.id, source: change.source }
        })
        return
      }
      pending.delete(record.id)
      if (change._tag === "place") {
        pending.set(record.id, { ...item, placement: change.placement, wakeup: true })
        return
      }
      if (change.before === undefined || !pending.has(change.before)) {
        pending.set(record.id, item)
        return
      }
      const entries = [...pending]
      pending.clear()
      for (const [key, value] of entries) {
        if (key === change.before) pending.set(record.id, item)
        pending.set(key, value)
      }
      return
    }
  }
}

/**
 * A tool call waits for a person's approval (ADR 0054): the call (its id, turn, step, tool name and the model's raw
 * argument text) and, when the agent has a timeout policy, the time (`Clock` epoch milliseconds) at which it is
 * denied unless answered. Written durably before anyone is asked, so a restart finds the call still pending.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ApprovalRequested = inboxRecord("approval/requested", {
  callId: ToolCallId,
  turn: PositiveInt,
  step: PositiveInt,
  name: Schema.String,
  arguments: Schema.String,
  deadline: optional(NonNegativeInt)
})
/**
 * @since 0.0.0
 * @category models
 */
export type ApprovalRequested = typeof ApprovalRequested.Type

/**
 * A pending approval was answered (ADR 0054): `allow` or `deny` (with the reason given), by a person (`by:
 * "person"`), by the agent's timeout policy (`by: "timeout"`), or closed by a cancel of its turn (`by: "cancel"`, a denial). Written durably before the call runs, so a call is
 * answered once and runs at most once per answer.
 *
 * @since 0.0.0
 * @category schemas
 */
export const ApprovalAnswered = inboxRecord("approval/answered", {
  callId: ToolCallId,
  decision: Schema.Literal("allow", "deny"),
  reason: optional(Schema.String),
  by: Schema.Literal("person", "timeout", "cancel")
})
/**
 * @since 0.0.0
 * @category models
 */
export type ApprovalAnswered = typeof ApprovalAnswered.Type

/**
 * The approvals still pending after a sequence of records, in request order (ADR 0054): an `approval/requested`
 * adds its call, an `approval/answered` removes it; other records change nothing. In place, like {@link foldPending}.
 *
 * @since 0.0.0
 * @category utils
 */
export const foldApprovals = (pending: Map<string, ApprovalRequested>, record: InboxRecord): void => {
  if (record.type === "approval/requested") pending.set(record.callId, record)
  else if (record.type === "approval/answered") pending.delete(record.callId)
}

/**
 * A durable inbox record. The agent writes them (in the same commits as the events they go with); a store only
 * stores them, in commit order among the events. Their `type`s never collide with an event's: inbox records are
 * `inbox/*` and, since ADR 0054, the approval records `approval/*` (a pending approval outlives the turn that asked,
 * which an event could not); events are neither.
 *
 * @since 0.0.0
 * @category schemas
 */
export const InboxRecord = Schema.Union(
  InboxAccepted,
  InboxSettled,
  InboxRevised,
  ApprovalRequested,
  ApprovalAnswered
).annotations({
  identifier: "InboxRecord"
})
/**
 * @since 0.0.0
 * @category models
 */
export type InboxRecord = typeof InboxRecord.Type

/**
 * One stored record: an event or an inbox record.
 *
 * @since 0.0.0
 * @category models
 */
export type StoreRecord = SessionEvent | InboxRecord

/**
 * Whether a record is an inbox record (else it is an event).
 *
 * @since 0.0.0
 * @category guards
 */
export const isInboxRecord = (record: StoreRecord): record is InboxRecord =>
  record.type === "inbox/accepted" || record.type === "inbox/settled" || record.type === "inbox/revised" ||
  record.type === "approval/requested" || record.type === "approval/answered"

/**
 * The accepted message id a record proves: an `inbox/accepted`'s message id, or the `messageId` of a
 * `user/message` or `steering/message`. A store indexes these so "was this id ever accepted here?" needs no scan.
 *
 * @since 0.0.0
 * @category utils
 */
export const messageIdOf = (record: StoreRecord): AgentMessageId | undefined => {
  switch (record.type) {
    case "inbox/accepted":
      return record.message.id
    case "user/message":
    case "steering/message":
      return record.data.messageId
    default:
      return undefined
  }
}

/**
 * The longest {@link promptPreviewOf} in characters (code points).
 *
 * @since 0.0.0
 * @category constants
 */
export const promptPreviewLength = 200

/**
 * The preview a session summary shows for a human prompt: for a `user/message` whose `source.kind` is `"user"`,
 * the joined text of its content cut to {@link promptPreviewLength} code points (never splitting a surrogate
 * pair); nothing for any other record.
 *
 * @since 0.0.0
 * @category utils
 */
export const promptPreviewOf = (record: StoreRecord): string | undefined => {
  if (record.type !== "user/message" || record.data.source.kind !== "user") return undefined
  const text = joinText(record.data.content)
  // Fast path: a text of at most `promptPreviewLength` code units has at most that many code points.
  if (text.length <= promptPreviewLength) return text
  let out = ""
  let count = 0
  for (const codePoint of text) {
    if (count === promptPreviewLength) break
    out += codePoint
    count++
  }
  return out
}
