/**
 * The loopback model server of the provider path (ADR 0057): an OpenAI-compatible `POST /chat/completions` that
 * answers every request with the bench's fixed script as server-sent events, so each runtime's own
 * chat-completions client (Harness's `@harness/llm` provider, pi-ai's `openai-completions`) parses the same bytes.
 *
 * The script is decided by the request alone, as the instant workloads' scripts are: a request that offers tools
 * and whose last message is not a tool result gets one call of the first tool with `{}`; every other request gets
 * the five tokens of `fiveTokens` as one text block. Every reply is one HTTP response of pre-encoded SSE frames
 * written in one go (an instant model): a role delta, the content or tool-call deltas, a `finish_reason` frame, a
 * usage frame and `data: [DONE]`.
 *
 * The runner starts one server for the whole run, in its own process, so a worker's CPU time counts only the
 * runtime under test; a worker started without one (smoke tests, `cpuProbe`, the profiler) starts its own.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { fiveTokens } from "./Runtime.js"

/** The environment variable a worker reads the server's base URL from. */
export const sseUrlEnv = "BENCH_SSE_URL"

/** What the server answers a request with. */
export type Served =
  | { readonly _tag: "text"; readonly tokens: ReadonlyArray<string> }
  | { readonly _tag: "tool-call"; readonly name: string; readonly arguments: string }

interface RequestBody {
  readonly messages?: ReadonlyArray<{ readonly role?: string }>
  readonly tools?: ReadonlyArray<{ readonly function?: { readonly name?: string } }>
}

/** The fixed script: a tool call when tools are offered and the last message is not a tool's result, else text. */
const answerFor = (body: RequestBody): Served => {
  const last = body.messages?.at(-1)?.role
  const tool = body.tools?.[0]?.function?.name
  return tool !== undefined && last !== "tool"
    ? { _tag: "tool-call", name: tool, arguments: "{}" }
    : { _tag: "text", tokens: fiveTokens._tag === "text" ? fiveTokens.tokens : [] }
}

/** One event of the stream: a chunk of the bench's answer with `fields` (its choices, its usage). */
const chunk = (fields: object): string =>
  `data: ${
    JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model: "bench", ...fields })
  }\n\n`

const frame = (delta: object, finish: string | null = null): string =>
  chunk({ choices: [{ index: 0, delta, finish_reason: finish }] })

const usageFrame = (output: number): string =>
  chunk({ choices: [], usage: { prompt_tokens: 0, completion_tokens: output, total_tokens: output } })

/** The SSE body of one answer, as the OpenAI chat-completions streaming format has it. */
export const sseBody = (served: Served): string =>
  served._tag === "tool-call"
    ? [
      frame({ role: "assistant", content: null }),
      frame({
        tool_calls: [{ index: 0, id: "call-0", type: "function", function: { name: served.name, arguments: "" } }]
      }),
      frame({ tool_calls: [{ index: 0, function: { arguments: served.arguments } }] }),
      frame({}, "tool_calls"),
      usageFrame(0),
      "data: [DONE]\n\n"
    ].join("")
    : [
      frame({ role: "assistant", content: "" }),
      ...served.tokens.map((token) => frame({ content: token })),
      frame({}, "stop"),
      usageFrame(served.tokens.length),
      "data: [DONE]\n\n"
    ].join("")

/** A running server: its base URL (for a client's `baseUrl`) and how many requests it answered. */
export interface SseServer {
  readonly url: string
  readonly requests: () => number
  readonly close: () => Promise<void>
}

const readBody = (request: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    let body = ""
    request.setEncoding("utf8")
    request.on("data", (chunk: string) => (body += chunk))
    request.on("end", () => resolve(body))
    request.on("error", reject)
  })

/** Starts the server on a free loopback port. */
export const startSseServer = (): Promise<SseServer> => {
  let requests = 0
  // The two answers are encoded once: every request of a kind gets the same bytes.
  const cache = new Map<string, Buffer>()
  const bytesOf = (served: Served): Buffer => {
    const key = served._tag === "text" ? "text" : `tool:${served.name}`
    let bytes = cache.get(key)
    if (bytes === undefined) cache.set(key, bytes = Buffer.from(sseBody(served)))
    return bytes
  }
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const raw = await readBody(request)
    if (request.method !== "POST" || !(request.url ?? "").endsWith("/chat/completions")) {
      response.writeHead(404, { "content-type": "application/json" }).end(`{"error":{"message":"not found"}}`)
      return
    }
    let body: RequestBody
    try {
      body = JSON.parse(raw) as RequestBody // only `messages[].role` and `tools[].function.name` are read, optionally
    } catch {
      response.writeHead(400, { "content-type": "application/json" }).end(`{"error":{"message":"bad JSON"}}`)
      return
    }
    requests++
    const bytes = bytesOf(answerFor(body))
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "content-length": bytes.length
    })
    response.end(bytes)
  }
  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy())
  })
  server.keepAliveTimeout = 60_000
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo // a TCP server's address
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        requests: () => requests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
}
