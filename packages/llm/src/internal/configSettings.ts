/**
 * The provider's defaults and its settings' descriptions, as plain data with no runtime imports:
 * `ChatCompletionsSettings` publishes them for a command line or a settings page, which can show them without loading
 * the provider.
 */
import type { ConfigSetting } from "../ChatCompletionsSettings.js"

export const deepSeekBaseUrl = "https://api.deepseek.com"

export const defaultModel = "deepseek-v4-flash"

const entry = (
  option: string,
  name: string,
  description: string,
  fallback: string,
  secret = false
): ConfigSetting & { readonly name: string } => ({ option, name, key: `LLM_${name}`, description, fallback, secret })

/** The settings of `ChatCompletions.config`, by option. */
export const settingOf = {
  baseUrl: entry(
    "baseUrl",
    "BASE_URL",
    "The server's base URL (`/chat/completions` is appended unless already there).",
    deepSeekBaseUrl
  ),
  model: entry("model", "MODEL", "The model name.", defaultModel),
  apiKey: entry("apiKey", "API_KEY", "The API key: required for DeepSeek's URL.", "none", true),
  maxOutputTokens: entry("maxOutputTokens", "MAX_OUTPUT_TOKENS", "The output-token limit.", "not sent"),
  maxTokensParameter: entry(
    "maxTokensParameter",
    "MAX_TOKENS_PARAMETER",
    "The body field of the output-token limit: max_tokens | max_completion_tokens.",
    "max_tokens"
  ),
  temperature: entry(
    "temperature",
    "TEMPERATURE",
    "Sampling temperature, 0–2 (not sent in thinking mode).",
    "not sent"
  ),
  topP: entry("topP", "TOP_P", "Nucleus sampling, (0, 1] (not sent in thinking mode).", "not sent"),
  thinking: entry(
    "thinking",
    "THINKING",
    "DeepSeek's thinking mode: enabled | disabled.",
    "enabled on DeepSeek's URL"
  ),
  reasoningEffort: entry("reasoningEffort", "REASONING_EFFORT", "reasoning_effort (e.g. low, high).", "not sent"),
  headers: entry("headers", "HEADERS", "Extra request headers, a JSON object; every value is a secret.", "none", true),
  body: entry("body", "BODY", "Extra body fields, a JSON object, merged last.", "none"),
  requestTimeout: entry(
    "requestTimeout",
    "REQUEST_TIMEOUT",
    "How long to wait for the response headers.",
    "120 seconds"
  ),
  idleTimeout: entry(
    "idleTimeout",
    "IDLE_TIMEOUT",
    "How long a response may go without progress once its headers arrived.",
    "120 seconds"
  ),
  deadline: entry("deadline", "DEADLINE", "The most time one attempt may take.", "10 minutes"),
  maxReplyBytes: entry(
    "maxReplyBytes",
    "MAX_REPLY_BYTES",
    "The most text, reasoning and tool-call arguments one reply may carry, in UTF-8 bytes.",
    "8388608 (8 MiB)"
  ),
  maxRetries: entry(
    "retry.maxRetries",
    "MAX_RETRIES",
    "Retries of a failed request while nothing was streamed; 0 disables retrying.",
    "2"
  ),
  retryBaseDelay: entry(
    "retry.baseDelay",
    "RETRY_BASE_DELAY",
    "The first backoff delay, doubled per retry, jittered by ±20%.",
    "1 second"
  ),
  retryMaxDelay: entry(
    "retry.maxDelay",
    "RETRY_MAX_DELAY",
    "The cap on a backoff delay; a longer Retry-After means no retry.",
    "30 seconds"
  ),
  retryDeadline: entry(
    "retry.deadline",
    "RETRY_DEADLINE",
    "The most time one model call may take, every attempt and wait included.",
    "none"
  )
}
