/**
 * Prompt admission (R39–R44): the `promptSubmit` waterfall decides whether a claimed prompt opens a turn, and with
 * what content and additional contexts. Runs in the activity fiber, which a cancel interrupts.
 */
import type { Message as MessageT, Turn as TurnT } from "@harness/domain"
import { Turn } from "@harness/domain"
import { Effect, Option, Schema } from "effect"
import type { Env } from "./env.js"
import type { UserInput } from "./inbox.js"
import { provide } from "./live.js"
import { honourCancel } from "./state.js"

const decodeDecision = Schema.decodeUnknownEither(Turn.PromptDecision, { errors: "all", onExcessProperty: "error" })

/**
 * Prompt admission (R39–R42): the `promptSubmit` waterfall decides. Returns the admitted inputs (the prompt, with
 * its id, then each additional context, without one), or `undefined` when the prompt is blocked or the hook failed
 * (logged as a warning; no `agent/error`, there is no turn to attribute it to).
 */
export const admit = (
  env: Env,
  message: MessageT.AgentMessage
): Effect.Effect<ReadonlyArray<UserInput> | undefined> => {
  const hook = env.options.hooks?.promptSubmit
  // Without a hook the decision is the default `allow`, known to be valid: nothing to run or decode (ADR 0023), and
  // no cancel check of its own (nothing ran; the turn's opening section checks first thing). The prompt is the
  // accepted message itself.
  if (hook === undefined) return Effect.succeed([message])
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
  const content = decision.right.content
  // A hook that replaced the content admits the message under its id with the new content.
  const prompt: UserInput = content === undefined ? message : { content, id: message.id, source: message.source }
  return [prompt, ...(decision.right.additionalContexts ?? [])]
})
