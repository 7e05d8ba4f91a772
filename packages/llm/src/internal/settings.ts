/**
 * Validated, defaulted provider settings: what the public options resolve to before any request is made.
 */
import type { Json } from "@harness/domain"
import type { Duration, Redacted } from "effect"

/** How failed requests are retried before any output reached the caller. */
export interface RetryPolicy {
  /** Retries after the first attempt (0 disables retrying). */
  readonly maxRetries: number
  /** The first delay of the exponential backoff (doubled per retry, jittered ±20%). */
  readonly baseDelay: Duration.Duration
  /** The cap on a backoff delay; a `Retry-After` longer than this means no retry. */
  readonly maxDelay: Duration.Duration
  /** The most time one model call may take, every attempt and wait included; none when undefined. */
  readonly deadline: Duration.Duration | undefined
}

/** Resolved settings. */
export interface Settings {
  /** The full endpoint URL: `<baseUrl>/chat/completions`. */
  readonly url: string
  readonly model: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly maxOutputTokens: number | undefined
  readonly maxTokensParameter: "max_tokens" | "max_completion_tokens"
  readonly temperature: number | undefined
  readonly topP: number | undefined
  /** Sent as `thinking: { type }` when defined. */
  readonly thinking: "enabled" | "disabled" | undefined
  /** Whether the DeepSeek thinking rules apply (reasoning_content on tool-call turns, no sampling parameters). */
  readonly thinkingMode: boolean
  readonly reasoningEffort: string | undefined
  /** Extra headers, secret ones kept `Redacted`. */
  readonly headers: ReadonlyArray<readonly [name: string, value: string | Redacted.Redacted<string>]>
  /** Extra body fields. */
  readonly body: Json.JsonObject
  readonly requestTimeout: Duration.Duration
  /** The most time between two SSE events (or body bytes, non-streamed) once the headers arrived. */
  readonly idleTimeout: Duration.Duration
  /** The most time one attempt may take, from sending the request to the end of the response. */
  readonly deadline: Duration.Duration
  /** The largest SSE event the parser holds, in string code units. */
  readonly maxEventSize: number
  /** The most text, reasoning, refusal and tool-call argument text one reply may carry, in UTF-8 bytes. */
  readonly maxReplyBytes: number
  readonly retry: RetryPolicy
}
