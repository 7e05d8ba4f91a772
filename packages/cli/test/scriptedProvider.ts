/**
 * A chat-completions server on loopback whose answers the test streams piece by piece: each request waits in
 * `requests` (in the order they came) until the test takes it and answers. So "while the answer streams" is a state
 * the test holds, however slow the machine is.
 */
import { Effect, Queue } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { chatChunk } from "./support.js"

/** One request to the scripted provider: what was asked, and how the test answers it (piece by piece). */
interface Request {
  /** The request's body (its JSON text): what the model was sent. */
  readonly body: string
  /** The system prompt of the request: which agent is asking. */
  readonly system: string
  /** Streams a piece of text. */
  readonly text: (content: string) => Effect.Effect<void>
  /** Answers with calls of `name`, one per arguments object, in one step. */
  readonly call: (name: string, ...args: ReadonlyArray<object>) => Effect.Effect<void>
  /** Finishes a text answer. */
  readonly end: Effect.Effect<void>
  /** Resolves when the client closed the request (a cancel aborts it). */
  readonly closed: Effect.Effect<void>
}

/**
 * Starts the server; `args` are the `harness` flags that point at it. Contract: requests wait in `requests` in
 * arrival order, their streams opened (an empty assistant delta sent); the server closes with the scope.
 */
export const scriptedProvider = Effect.gen(function*() {
  const requests = yield* Queue.unbounded<Request>()
  const server = createServer((request, response) => {
    let body = ""
    request.on("data", (part) => (body += part))
    request.on("end", () => {
      const closed = new Promise<void>((resolve) => response.on("close", () => resolve()))
      // The client's request body: chat-completions JSON.
      const parsed = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> }
      const system = parsed.messages.find((m) => m.role === "system")?.content
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write(chatChunk("scripted", { role: "assistant", content: "" }))
      requests.unsafeOffer({
        body,
        system: typeof system === "string" ? system : JSON.stringify(system),
        text: (content) => Effect.sync(() => void response.write(chatChunk("scripted", { content }))),
        call: (name, ...args) =>
          Effect.sync(() => {
            args.forEach((value, index) => {
              const call = { index, id: `call-${index}`, type: "function", function: { name, arguments: "" } }
              response.write(chatChunk("scripted", { tool_calls: [call] }))
              response.write(
                chatChunk("scripted", { tool_calls: [{ index, function: { arguments: JSON.stringify(value) } }] })
              )
            })
            response.write(chatChunk("scripted", {}, "tool_calls"))
            response.end("data: [DONE]\n\n")
          }),
        end: Effect.sync(() => {
          response.write(chatChunk("scripted", {}, "stop"))
          response.end("data: [DONE]\n\n")
        }),
        closed: Effect.promise(() => closed)
      })
    })
  })
  yield* Effect.acquireRelease(
    Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
    () =>
      Effect.sync(() => {
        server.closeAllConnections()
        server.close()
      })
  )
  const { port } = server.address() as AddressInfo // listening on TCP: an AddressInfo
  return { args: `--base-url http://127.0.0.1:${port}/v1 --model scripted`, requests }
})
