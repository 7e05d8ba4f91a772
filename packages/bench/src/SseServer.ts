/**
 * The loopback model server of the provider path (ADR 0057, 0077): an OpenAI-compatible `POST /chat/completions` that
 * answers every request with the bench's fixed script as server-sent events, so each runtime's own
 * chat-completions client (Harness's `@harness/llm` provider, pi-ai's `openai-completions`) parses the same bytes.
 *
 * The script is decided by the request alone, as the instant workloads' scripts are: a request that offers tools
 * and whose last message is not a tool result gets one call of the first tool with `{}`; every other request gets
 * the five tokens of `fiveTokens` as one text block. Every such reply is one HTTP response of pre-encoded SSE frames
 * written in one go (an instant model): a role delta, the content or tool-call deltas, a `finish_reason` frame, a
 * usage frame and `data: [DONE]`.
 *
 * A base URL under `/paced/<tokens>/<per second>` (`servedUrl`) streams a text reply of that many tokens at that
 * pace instead, whatever the request offers (Pace, Fleet): the role frame and the first token at once, token k written k intervals after the
 * first (the schedule drift-free), the last token with the closing frames; each token a write of its own, so a
 * client reads each in a network read of its own. The server keeps each paced stream's start and end
 * (`takePacedStreams`), so a workload can subtract the model's own time from a turn's.
 *
 * The runner starts one server for the whole run, in its own process, so a worker's CPU time counts only the
 * runtime under test; a worker started without one (smoke tests, `cpuProbe`, the profiler) starts its own.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { nowUs } from "./Measure.js"
import { type AgentOptions, fiveTokens, tokens } from "./Runtime.js"
import type { Metric } from "./Workload.js"

/** The environment variable a worker reads the server's base URL from. */
export const sseUrlEnv = "BENCH_SSE_URL"

/** What the server answers a request with. */
export type Served =
  | { readonly _tag: "text"; readonly tokens: ReadonlyArray<string> }
  | { readonly _tag: "tool-call"; readonly name: string; readonly arguments: string }

interface RequestBody {
  readonly messages?: ReadonlyArray<{
    readonly role?: string
    readonly content?: string | ReadonlyArray<{ readonly text?: string }> | null
  }>
  readonly tools?: ReadonlyArray<{ readonly function?: { readonly name?: string } }>
}

/** The base URL a client of `served` talks to: the server's own, or its paced route; none when not served. */
export const servedUrl = (url: string, served: AgentOptions["served"]): string | undefined =>
  served === undefined || served === false
    ? undefined
    : served === true
    ? url
    : `${url}/paced/${served.tokens}/${served.tokensPerSecond}`

// `<base>[/paced/<tokens>/<per second>]/chat/completions`
const route = /^.*?(?:\/paced\/(\d+)\/(\d+))?\/chat\/completions$/

/** The text of the request's last user message: the key its paced stream is kept under. */
const lastUserText = (body: RequestBody): string => {
  const content = body.messages?.filter((message) => message.role === "user").at(-1)?.content
  return typeof content === "string" ? content : (content ?? []).map((part) => part.text ?? "").join("")
}

/** A paced stream as the server ran it: when it wrote the first token and when the last (µs, the server's clock). */
export interface ModelClock {
  readonly start: number
  readonly end: number
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

/**
 * The frames of a paced reply of `count` tokens, as its writes: the role frame with the first token, then one
 * token a write, the last with the finish, usage and `[DONE]` frames.
 */
const pacedWrites = (count: number): ReadonlyArray<Buffer> => {
  const frames = sseBody({ _tag: "text", tokens: tokens(count) }).split(/(?<=\n\n)/)
  if (count <= 1) return [Buffer.from(frames.join(""))]
  return [
    Buffer.from(frames[0]! + frames[1]!),
    ...frames.slice(2, count).map((frame) => Buffer.from(frame)),
    Buffer.from(frames.slice(count).join(""))
  ]
}

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
  // The paced streams that ended since a client last took them, by the prompt that asked.
  const streams = new Map<string, ModelClock>()
  const writesOf = new Map<number, ReadonlyArray<Buffer>>()
  const pace = (response: ServerResponse, count: number, perSecond: number, key: string) => {
    let writes = writesOf.get(count)
    if (writes === undefined) writesOf.set(count, writes = pacedWrites(count))
    const frames = writes
    const intervalUs = 1e6 / perSecond
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    const start = nowUs()
    let k = 0
    let timer: ReturnType<typeof setTimeout> | undefined
    // Writes token k when its time on the schedule that started with the first has come (a timer can fire early by
    // what the event loop's cached time lags: then it waits again), and sets a timer for token k + 1.
    const next = () => {
      const earlyMs = (start + k * intervalUs - nowUs()) / 1000
      if (earlyMs > 1) {
        timer = setTimeout(next, earlyMs)
        return
      }
      if (k === frames.length - 1) {
        response.end(frames[k])
        streams.set(key, { start, end: nowUs() })
        return
      }
      response.write(frames[k++])
      timer = setTimeout(next, Math.max(0, (start + k * intervalUs - nowUs()) / 1000))
    }
    // A client that goes away (a cancelled turn) ends its stream.
    response.on("close", () => clearTimeout(timer))
    next()
  }
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const raw = await readBody(request)
    const path = (request.url ?? "").split("?")[0] ?? ""
    if (request.method === "GET" && path.endsWith("/paced-streams")) {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(Object.fromEntries(streams)))
      streams.clear()
      return
    }
    const matched = route.exec(path)
    if (request.method !== "POST" || matched === null) {
      response.writeHead(404, { "content-type": "application/json" }).end(`{"error":{"message":"not found"}}`)
      return
    }
    let body: RequestBody
    try {
      body = JSON.parse(raw) as RequestBody // only the messages' roles and text and the tools' names are read, optionally
    } catch {
      response.writeHead(400, { "content-type": "application/json" }).end(`{"error":{"message":"bad JSON"}}`)
      return
    }
    requests++
    if (matched[1] !== undefined && matched[2] !== undefined) {
      pace(response, Number(matched[1]), Number(matched[2]), lastUserText(body))
      return
    }
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

/**
 * The paced streams the server at `url` (a worker's `BENCH_SSE_URL`) ended since they were last taken, by the text
 * of the last user message of the request that asked for each; the server forgets them. Empty without a server.
 */
const takePacedStreams = async (
  url: string | undefined = process.env[sseUrlEnv]
): Promise<ReadonlyMap<string, ModelClock>> => {
  if (url === undefined) return new Map()
  const response = await fetch(`${url}/paced-streams`)
  if (!response.ok) throw new Error(`the loopback server answered ${response.status} for its paced streams`)
  const body = (await response.json()) as Record<string, ModelClock> // the bench's own server
  return new Map(Object.entries(body))
}

/** Forgets the paced streams the server kept (those of an earlier process that did not take them). */
export const forgetPacedStreams = async (url: string | undefined = process.env[sseUrlEnv]): Promise<void> => {
  await takePacedStreams(url)
}

/**
 * Each paced turn's model clock, by its prompt (`texts`, each asked once since the last call): the loopback server's
 * (at `url`, a worker's `BENCH_SSE_URL`) for a reply it streamed, else the in-process script's (`local`, by index);
 * and how many the server streamed. The server forgets what it kept.
 */
export const pacedClocks = async (
  texts: ReadonlyArray<string>,
  local: ReadonlyArray<ModelClock>,
  url: string | undefined = process.env[sseUrlEnv]
): Promise<{ readonly clocks: ReadonlyArray<ModelClock>; readonly served: number }> => {
  const streams = await takePacedStreams(url)
  return {
    clocks: texts.map((text, i) => streams.get(text) ?? local[i]!),
    served: texts.filter((text) => streams.has(text)).length
  }
}

/**
 * The share of a paced workload's replies a runtime read from the loopback server over HTTP (the provider path)
 * rather than from an in-process script: which of the columns' figures include an HTTP client and SSE decoding.
 */
export const servedShare: Metric = {
  id: "servedPercent",
  label: "replies read over loopback HTTP",
  unit: "%",
  better: "higher"
}
