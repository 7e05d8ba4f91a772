/**
 * The route of the model request being made, as a context reference. It lives in its own module so the turn loop
 * (`internal/turn.ts`) provides it without importing the public `Agent` module for a value; `Agent` re-exports it.
 *
 * @since 0.0.0
 */
import { Context } from "effect"
import type { RequestConfig } from "./Hooks.js"

/**
 * The route of the model request being made. The agent provides it around every `LanguageModel` call, so a
 * routing `LanguageModel` can read the `request` hook's decision.
 *
 * @since 0.0.0
 * @category services
 */
export class CurrentRequest extends Context.Reference<CurrentRequest>()("@harness/agent/CurrentRequest", {
  defaultValue: (): RequestConfig => ({ model: "default" })
}) {}
