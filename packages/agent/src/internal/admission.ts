/**
 * Prompt admission (R39–R44): the `promptSubmit` waterfall decides whether a claimed prompt opens a turn, and with
 * what content and additional contexts. Runs in the activity fiber, which a cancel interrupts.
 */
import type { Message as MessageT, Turn as TurnT } from "@harness/domain"
import { Turn } from "@harness/domain"
import { Effect, Option, Schema } from "effect"
import type { Env } from "./env.js"
import { provide } from "./live.js"
import { honourCancel } from "./state.js"

/** An admitted input: the prompt (with its id) or an additional context (without one). */
export type Admitted = { readonly data: MessageT.UserMessageData; readonly id: MessageT.AgentMessage["id"] | undefined }

const decodeDecision = Schema.decodeUnknownEither(Turn.PromptDecision, { errors: "all", onExcessProperty: "error" })

/**
 * Prompt admission (R39–R42): the `promptSubmit` waterfall decides. Returns the admitted inputs (the prompt, then
 * each additional context), or `undefined` when the prompt is blocked or the hook failed (logged as a warning; no
 * `agent/error`, there is no turn to attribute it to).
 */
export const admit = (env: Env, message: MessageT.AgentMessage): Effect.Effect<ReadonlyArray<Admitted> | undefined> => {
  const hook = env.options.hooks?.promptSubmit
  // Without a hook the decision is the default `allow`, known to be valid: nothing to run or decode (ADR 0023), and
  // no cancel check of its own (nothing ran; the turn's opening section checks first thing).
  if (hook === undefined) {
    return Effect.succeed([{ data: { content: message.content, source: message.source }, id: message.id }])
  }
  return admitWith(env, message, hook)
}

/** The `promptSubmit` hook's decision, decoded (R39–R42). */
const admitWith = Effect.fnUntraced(function*(
  env: Env,
  message: MessageT.AgentMessage,
  hook: NonNullable<NonNullable<Env["options"]["hooks"]>["promptSubmit"]>
) {
  const allow: TurnT.PromptDecision = { kind: "allow" }
  const outcome = yield* provide(env, hook({ agent: env.service, message }, Effect.succeed(allow))).pipe(
    Effect.map(Option.some<unknown>),
    Effect.catchAllCause((cause) =>
      Effect.as(
        Effect.logWarning("promptSubmit hook failed; the prompt was dropped without a turn", cause),
        Option.none()
      )
    )
  )
  yield* honourCancel(env)
  if (Option.isNone(outcome)) return undefined
  const decision = decodeDecision(outcome.value)
  if (decision._tag === "Left") {
    yield* Effect.logWarning("promptSubmit hook returned an invalid decision; the prompt was dropped", decision.left)
    return undefined
  }
  if (decision.right.kind === "block") {
    yield* Effect.logDebug(`prompt ${message.id} blocked: ${decision.right.reason}`)
    return undefined
  }
  const prompt: Admitted = {
    data: { content: decision.right.content ?? message.content, source: message.source },
    id: message.id
  }
  return [prompt, ...(decision.right.additionalContexts ?? []).map((data) => ({ data, id: undefined }))]
})
