/**
 * The chat-completions provider's own checks of its `LLM_*` settings, run by the CLI before any command uses them —
 * also by `harness config`, and also on the offline model — so a value the provider would refuse
 * (`LLM_TEMPERATURE=hot`, `LLM_MAX_RETRIES=-1`, an `LLM_HEADERS` that is not a JSON object) is a setting error
 * (exit code 2) wherever it appears. Loaded only when an `LLM_*` setting is set: it loads the provider.
 */
import { HttpClient } from "@effect/platform"
import { ChatCompletions } from "@harness/llm"
import { Effect, Redacted } from "effect"
import { SettingsError } from "../CliError.js"
import type { Settings } from "../Settings.js"
import { redactText } from "./redact.js"

/** The `LLM_*` key of a provider option (`retry.maxRetries` is `LLM_MAX_RETRIES`). */
const keyOf = (option: string): string =>
  ChatCompletions.configSettings.find((setting) => setting.option === option)?.key ?? option

/** A client for the checks: building the provider sends no request, so this one is never called. */
const unused = HttpClient.make(() => Effect.dieMessage("the settings check sends no request"))

/**
 * Reads `ChatCompletions.config` and builds the provider from it (with the CLI's model, base URL and key) without
 * sending anything. Contract: fails with a `SettingsError` naming the first setting the provider refuses; the
 * message shows no secret. A missing API key is not checked here (the offline model needs none).
 */
export const check = (settings: Settings): Effect.Effect<void, SettingsError> =>
  Effect.gen(function*() {
    const options = yield* ChatCompletions.config.pipe(
      Effect.mapError((error) =>
        new SettingsError({
          setting: "LLM_*",
          message: `a provider setting cannot be used: ${redactText(String(error))} (harness config --describe ` +
            "says what each one takes)"
        })
      )
    )
    yield* ChatCompletions.makeContext({
      ...options,
      model: settings.model.value,
      baseUrl: settings.baseUrl.value ?? options.baseUrl,
      apiKey: settings.apiKey.value ?? options.apiKey ?? Redacted.make("not-needed-for-the-check")
    }).pipe(
      Effect.provideService(HttpClient.HttpClient, unused),
      Effect.mapError((error) =>
        new SettingsError({
          setting: keyOf(error.option),
          message: `${keyOf(error.option)}: ${redactText(error.message)} (harness config --describe says what it takes)`
        })
      )
    )
  })
