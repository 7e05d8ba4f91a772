/**
 * `approve` (R168), and the tool calls a restart cut: an approval answered after the restart (R169), the replay of
 * calls safe to repeat (R172). Such a call runs now and its outcome is sent as a message.
 */
import type { Approval, Ids, Message as MessageT, SessionEvent } from "@harness/domain"
import { Approval as ApprovalSchemas } from "@harness/domain"
import { Deferred, Effect } from "effect"
import type { FinishedCall } from "./activity.js"
import * as Approvals from "./approvals.js"
import type { Env } from "./env.js"
import { provide } from "./live.js"
import type { ApprovalAnswered } from "./state.js"
import { answerReason, decodeCall, resultBase, resultOf, type StepCall } from "./toolCalls.js"

/** The source of the messages that carry the outcome of a call a restart cut (ADR 0054). */
const approvalSource = { kind: "plugin", plugin: "harness/approval" } as const

const say = (text: string): MessageT.UserMessageData => ({
  content: [{ type: "text", text }],
  source: approvalSource
})

/** Decodes and runs, now, a call whose turn a restart closed (an allowed approval, a replay): its result. */
const runCut = (
  env: Env,
  cut: {
    readonly turn: number
    readonly step: number
    readonly callId: Ids.ToolCallId
    readonly name: string
    readonly arguments: string
  }
): Effect.Effect<FinishedCall> => {
  const call: StepCall = {
    turn: cut.turn,
    step: cut.step,
    block: { type: "tool-call", id: cut.callId, name: cut.name, arguments: cut.arguments }
  }
  const decoded = decodeCall(env, call)
  return decoded._tag === "final"
    ? Effect.succeed(decoded.result)
    : Effect.flatMap(
      Effect.exit(provide(env, decoded.tool.handler(decoded.params, { callId: cut.callId, agent: env.service }))),
      (exit) => resultOf(resultBase(call), decoded.tool, exit, env.maxToolResult)
    )
}

/** The text of a finished call's result, for a message. */
const resultText = (finished: FinishedCall): string => {
  const text = finished.data.content.map((block) => block.text).join("\n")
  return `${finished.data.isError ? "It failed" : "Its result"}:\n${text === "" ? "(empty)" : text}`
}

/**
 * Acts on the answer to a call whose turn a restart cut (R169): a denial is injected as context (the model was told
 * the call is pending, and nothing needs to run); an allowed call is decoded and run now, once, and its result is
 * sent as a waking followup. Failures to send are logged: the answer is recorded already.
 */
export const resolveCut = (
  env: Env,
  pending: Approval.PendingApproval,
  answered: ApprovalAnswered
): Effect.Effect<void> => {
  const what = `The tool call ${pending.name} (${pending.callId}) of turn ${pending.turn}, which was waiting for ` +
    "approval when the session restarted,"
  const sent = (effect: Effect.Effect<unknown, unknown>) =>
    Effect.catchAllCause(
      Effect.asVoid(effect),
      (cause) => Effect.logError("the outcome of an approved call could not be sent", cause)
    )
  if (answered.decision === "deny") {
    return sent(env.service.inject(say(`${what} was denied (${answerReason(answered)}). It did not run.`)))
  }
  const run = runCut(env, pending)
  return Effect.flatMap(
    run,
    (finished) => sent(env.service.followup(say(`${what} was allowed and has now run. ${resultText(finished)}`)))
  )
}

/**
 * `approve(callId, answer)` (R168): takes the pending entry (one taker wins), records the answer durably, then
 * hands it to the waiting call of the open turn, or acts on it for a call a restart cut.
 */
export const approve = Effect.fnUntraced(function*(
  env: Env,
  callId: Ids.ToolCallId,
  answer: Approval.ApprovalAnswer
) {
  const entry = yield* Approvals.take(env, callId)
  if (entry === undefined) {
    return yield* Effect.fail(
      new ApprovalSchemas.ApprovalError({
        callId,
        reason: "not-pending",
        message: `no approval of tool call ${JSON.stringify(callId)} is pending in this session: it was never asked ` +
          "here, or it was answered already"
      })
    )
  }
  const answered: ApprovalAnswered = answer.kind === "allow"
    ? { decision: "allow", by: "person" }
    : { decision: "deny", reason: answer.reason, by: "person" }
  yield* Approvals.record(env, callId, answered).pipe(Effect.tapError(() => Approvals.put(env, entry)))
  if (entry.waiting !== undefined) yield* Deferred.succeed(entry.waiting, answered)
  else yield* resolveCut(env, entry.pending, answered)
})

const replaySource = { kind: "plugin", plugin: "harness/replay" } as const

/** The id of the followup that carries a replayed call's result: one per call, so it is accepted once (R172). */
const replayMessageId = (callId: string): Ids.AgentMessageId => `replay:${callId}` as Ids.AgentMessageId

/**
 * Replays the calls a crash cut whose tools are safe to repeat (R172): each `tool/result` of the session's last turn
 * that crash repair answered `TOOL_REPLAY_PENDING` and whose followup was never accepted is run again now and its
 * result sent as a waking followup from `harness/replay`, under {@link replayMessageId}. A crash before that
 * followup is accepted runs the call again on the next resume (the tool said it is safe); once accepted, never.
 * Failures to send are logged.
 */
export const replayCut = Effect.fnUntraced(function*(env: Env) {
  // The last turn only: a resumed long session is not read back whole (R227).
  const events = yield* env.log.lastTurn
  // The last turn, read backwards: its results come after their calls.
  const results = new Set<string>()
  const cut: Array<SessionEvent.SessionEventOf<"tool/call">["data"]> = []
  for (let index = events.length - 1; index >= 0; index--) {
    const event = events[index]!
    if (event.type === "tool/result" && event.data.error?.code === "TOOL_REPLAY_PENDING") {
      results.add(event.data.callId)
    }
    if (event.type === "tool/call" && results.has(event.data.callId)) cut.unshift(event.data)
    if (event.type === "turn/start") break
  }
  for (const call of cut) {
    const id = replayMessageId(call.callId)
    if (yield* env.log.hasMessage(id)) continue
    const finished = yield* runCut(env, call)
    yield* env.service.followup({
      content: [{
        type: "text",
        text: `The tool call ${call.name} (${call.callId}) of turn ${call.turn}, which was running when the ` +
          `session restarted, has run again. ${resultText(finished)}`
      }],
      source: replaySource
    }, { id }).pipe(
      Effect.catchAllCause((cause) => Effect.logError("the result of a replayed call could not be sent", cause))
    )
  }
})
