/**
 * The chat-completions provider's defaults and a description of every setting its standard configuration reads, as
 * plain data: what a command line or a settings page shows. This module loads nothing else, so showing them does not
 * load the provider (`ChatCompletions` exports the same values).
 *
 * @since 0.0.0
 */
import * as internal from "./internal/configSettings.js"

/**
 * DeepSeek's API base URL, the default.
 *
 * @since 0.0.0
 * @category constants
 */
export const deepSeekBaseUrl = internal.deepSeekBaseUrl

/**
 * The default model.
 *
 * @since 0.0.0
 * @category constants
 */
export const defaultModel = internal.defaultModel

/**
 * DeepSeek's current chat models (`deepseek-chat` / `deepseek-reasoner` were retired in July 2026).
 *
 * @since 0.0.0
 * @category constants
 */
export const deepSeekModels = ["deepseek-v4-flash", "deepseek-v4-pro"] as const

/**
 * One setting of the standard configuration (`ChatCompletions.config`), described: what `harness config` and similar
 * tools list — the option it sets, its environment key, what it means, its default and whether it is a secret.
 *
 * @since 0.0.0
 * @category models
 */
export interface ConfigSetting {
  /** The option it sets (`retry.maxRetries` for a field of `retry`). */
  readonly option: string
  /** The key as an environment variable: the configuration is nested under `LLM`, so `MODEL` is `LLM_MODEL`. */
  readonly key: string
  readonly description: string
  /** The default, as a person reads it. */
  readonly fallback: string
  /** A secret is never shown, only whether it is set. */
  readonly secret: boolean
}

/**
 * Every setting `ChatCompletions.config` reads, in the order of `ChatCompletions.Options`.
 *
 * @since 0.0.0
 * @category constants
 */
export const configSettings: ReadonlyArray<ConfigSetting> = Object.values(internal.settingOf).map(
  ({ description, fallback, key, option, secret }) => ({ option, key, description, fallback, secret })
)
