/**
 * Response fixtures in the exact wire format of the DeepSeek and OpenAI chat-completions documentation: a role
 * chunk, content and reasoning deltas, tool-call fragments split mid-JSON, a usage chunk, `[DONE]`.
 */

/** One SSE frame carrying `payload` as JSON. */
export const frame = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`

export const done = "data: [DONE]\n\n"

/** DeepSeek sends SSE comments while a request waits to be scheduled. */
export const keepAlive = ": keep-alive\n\n"

export interface ToolCallScript {
  readonly id: string
  readonly name: string
  /** The argument text as split by the server (fragments may cut the JSON anywhere). */
  readonly fragments: ReadonlyArray<string>
}

// DeepSeek ---------------------------------------------------------------------------------------------------

const deepSeekId = "1f633d8b-fc03-2625-0861-4f14113c4116"

const deepSeekChunk = (
  delta: Record<string, unknown>,
  finishReason: string | null = null,
  usage?: Record<string, unknown>
): string =>
  frame({
    id: deepSeekId,
    object: "chat.completion.chunk",
    created: 1767411028,
    model: "deepseek-v4-flash",
    system_fingerprint: "fp_058df29938_prod0820_fp8_kvcache",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(usage === undefined ? {} : { usage })
  })

const deepSeekUsage = {
  prompt_tokens: 120,
  completion_tokens: 48,
  total_tokens: 168,
  prompt_tokens_details: { cached_tokens: 64 },
  completion_tokens_details: { reasoning_tokens: 30 },
  prompt_cache_hit_tokens: 64,
  prompt_cache_miss_tokens: 56
}

/**
 * DeepSeek in thinking mode: a role chunk, reasoning deltas, then content deltas or tool-call fragments, a final
 * chunk with `finish_reason` and `usage`, `[DONE]`.
 */
export const deepSeekStream = (script: {
  readonly reasoning?: ReadonlyArray<string>
  readonly content?: ReadonlyArray<string>
  readonly toolCalls?: ReadonlyArray<ToolCallScript>
  readonly finishReason?: string
  readonly usage?: Record<string, unknown>
  readonly withDone?: boolean
}): ReadonlyArray<string> => {
  const frames: Array<string> = [keepAlive, deepSeekChunk({ role: "assistant", content: null, reasoning_content: "" })]
  for (const piece of script.reasoning ?? []) frames.push(deepSeekChunk({ content: null, reasoning_content: piece }))
  for (const piece of script.content ?? []) frames.push(deepSeekChunk({ content: piece, reasoning_content: null }))
  ;(script.toolCalls ?? []).forEach((call, index) => {
    frames.push(deepSeekChunk({
      content: null,
      reasoning_content: null,
      tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }]
    }))
    for (const fragment of call.fragments) {
      frames.push(deepSeekChunk({
        content: null,
        reasoning_content: null,
        tool_calls: [{ index, function: { arguments: fragment } }]
      }))
    }
  })
  const finish = script.finishReason ?? ((script.toolCalls ?? []).length > 0 ? "tool_calls" : "stop")
  frames.push(deepSeekChunk({ content: "", reasoning_content: null }, finish, script.usage ?? deepSeekUsage))
  if (script.withDone !== false) frames.push(done)
  return frames
}

/** A non-streamed DeepSeek completion. */
export const deepSeekCompletion = (message: Record<string, unknown>, finishReason = "stop") => ({
  id: deepSeekId,
  object: "chat.completion",
  created: 1767411028,
  model: "deepseek-v4-flash",
  system_fingerprint: "fp_058df29938_prod0820_fp8_kvcache",
  choices: [{ index: 0, message: { role: "assistant", ...message }, logprobs: null, finish_reason: finishReason }],
  usage: deepSeekUsage
})

// OpenAI -----------------------------------------------------------------------------------------------------

const openAiChunk = (choices: ReadonlyArray<unknown>, usage: unknown = null): string =>
  frame({
    id: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    object: "chat.completion.chunk",
    created: 1741570283,
    model: "gpt-4o-2024-08-06",
    service_tier: "default",
    system_fingerprint: "fp_fc9f1d7035",
    choices,
    usage
  })

const openAiUsage = {
  prompt_tokens: 35,
  completion_tokens: 12,
  total_tokens: 47,
  prompt_tokens_details: { cached_tokens: 16, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 0,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0
  }
}

/**
 * OpenAI with `stream_options.include_usage`: every chunk has `usage: null`, the finish chunk has an empty delta,
 * and a last chunk with `choices: []` carries the usage.
 */
export const openAiStream = (script: {
  readonly content?: ReadonlyArray<string>
  readonly toolCalls?: ReadonlyArray<ToolCallScript>
  readonly finishReason?: string
}): ReadonlyArray<string> => {
  const frames: Array<string> = []
  const calls = script.toolCalls ?? []
  if (calls.length === 0) {
    frames.push(openAiChunk([{
      index: 0,
      delta: { role: "assistant", content: "", refusal: null },
      logprobs: null,
      finish_reason: null
    }]))
  }
  for (const piece of script.content ?? []) {
    frames.push(openAiChunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]))
  }
  calls.forEach((call, index) => {
    frames.push(openAiChunk([{
      index: 0,
      delta: {
        ...(index === 0 ? { role: "assistant", content: null } : {}),
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
        ...(index === 0 ? { refusal: null } : {})
      },
      logprobs: null,
      finish_reason: null
    }]))
    for (const fragment of call.fragments) {
      frames.push(openAiChunk([{
        index: 0,
        delta: { tool_calls: [{ index, function: { arguments: fragment } }] },
        logprobs: null,
        finish_reason: null
      }]))
    }
  })
  const finish = script.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop")
  frames.push(openAiChunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]))
  frames.push(openAiChunk([], openAiUsage))
  frames.push(done)
  return frames
}
