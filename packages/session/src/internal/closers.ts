/**
 * The closers' implementation (see the public `Closers` module for the contract).
 */
import type { SessionEvent } from "@harness/domain"
import type { Answer, CloseOptions } from "../Closers.js"
import type { LogState, OwedCall } from "../LogCheck.js"

export const outcomeUnknownText =
  "Error: the session was interrupted while this tool call was running, so its outcome is unknown. It may or may " +
  "not have taken effect: check before retrying it."

export const notStartedText =
  "Error: the session was interrupted before this tool call started, so it never ran. It may be retried."

export const approvalPendingText =
  "Error: the session was interrupted while this tool call waited for approval, so it has not run. Its approval " +
  "is still pending: if it is allowed, the call runs then and its result arrives as a message."

export const replayPendingText =
  "Error: the session was interrupted while this tool call was running. The tool is safe to repeat, so it runs " +
  "again when the session resumes, and its result arrives as a message."

export const approvalPendingAnswer: Answer = {
  content: [{ type: "text", text: approvalPendingText }],
  isError: true,
  error: { name: "ToolError", code: "APPROVAL_PENDING" }
}

export const errorAnswer = (
  code: string,
  message: string,
  options?: { readonly name?: string | undefined; readonly recordCall?: boolean | undefined }
): Answer => ({
  content: [{ type: "text", text: `Error: ${message}` }],
  isError: true,
  error: { name: options?.name ?? "ToolError", code },
  ...(options?.recordCall === undefined ? {} : { recordCall: options.recordCall })
})

export const repairAnswer = (call: OwedCall): Answer =>
  call.callSeq === undefined
    ? {
      content: [{ type: "text", text: notStartedText }],
      isError: true,
      error: { name: "ToolError", code: "TOOL_NOT_STARTED" }
    }
    : call.replay === "safe"
    ? {
      content: [{ type: "text", text: replayPendingText }],
      isError: true,
      error: { name: "ToolError", code: "TOOL_REPLAY_PENDING" }
    }
    : {
      content: [{ type: "text", text: outcomeUnknownText }],
      isError: true,
      error: { name: "ToolError", code: "TOOL_OUTCOME_UNKNOWN" }
    }

export const close = (state: LogState, options: CloseOptions): ReadonlyArray<SessionEvent.SessionEventInput> => {
  const turn = state.openTurn
  if (turn === undefined) return []
  const out: Array<SessionEvent.SessionEventInput> = []
  const step = state.openStep
  if (step !== undefined) {
    const answer = options.answer ?? repairAnswer
    for (const owed of state.owed) {
      const given = answer({ ...owed, turn, step })
      let callSeq = owed.callSeq
      if (callSeq === undefined && given.recordCall === true) {
        callSeq = state.nextSeq + out.length
        out.push({
          type: "tool/call",
          data: { turn, step, callId: owed.callId, name: owed.name, arguments: owed.arguments }
        })
      }
      out.push({
        type: "tool/result",
        data: {
          turn,
          step,
          callId: owed.callId,
          name: owed.name,
          content: given.content,
          isError: given.isError,
          ...(given.error === undefined ? {} : { error: given.error }),
          ...(given.meta === undefined ? {} : { meta: given.meta })
        },
        ...(callSeq === undefined ? {} : { sourceEventSeqs: [callSeq] })
      })
    }
  }
  for (const record of options.afterResults ?? []) out.push(record)
  if (step !== undefined) out.push({ type: "step/end", data: { turn, step } })
  out.push({ type: "turn/end", data: { turn, reason: options.reason } })
  return out
}

export const repair = (state: LogState): ReadonlyArray<SessionEvent.SessionEventInput> =>
  close(state, { reason: { kind: "interrupted" } })
