/**
 * A fake chat-completions server on 127.0.0.1 (node `http`, random port) for provider tests over real HTTP. It
 * records every request it receives and answers with scripted replies, in order; when the script runs out it
 * answers with the fallback reply (500 unless set). Started and stopped with the test's scope.
 */
import type { Scope } from "effect"
import { Effect, Queue } from "effect"
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** A request as the server received it. */
interface Recorded {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The body text exactly as received. */
  readonly raw: string
  /** The body parsed as a JSON object (`{}` when it is not one). */
  readonly body: { readonly [key: string]: unknown }
}

/** Answers one request (`body`: the request's body parsed as a JSON object, `{}` when it is not one). */
export type Reply = (
  request: IncomingMessage,
  response: ServerResponse,
  body: { readonly [key: string]: unknown }
) => void

export interface FakeServer {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string
  /** Appends replies to the script. */
  readonly reply: (...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
  /** The reply used once the script is exhausted. */
  readonly otherwise: (reply: Reply) => Effect.Effect<void>
  /** Every request received so far, in order. */
  readonly requests: Effect.Effect<ReadonlyArray<Recorded>>
  /** Waits for the next received request not yet taken (in arrival order). */
  readonly takeRequest: Effect.Effect<Recorded>
}

const parse = (raw: string): { readonly [key: string]: unknown } => {
  try {
    const parsed: unknown = JSON.parse(raw)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? { ...parsed } : {}
  } catch {
    return {}
  }
}

const notScripted: Reply = (_, response) => {
  response.writeHead(500, { "content-type": "application/json" })
  response.end(JSON.stringify({ error: { message: "fake server: no scripted reply left", type: "test" } }))
}

/** Starts a server for the current scope. */
export const make: Effect.Effect<FakeServer, never, Scope.Scope> = Effect.gen(function*() {
  const arrivals = yield* Queue.unbounded<Recorded>()
  // The node side of the boundary: callbacks read and write these synchronously.
  const script: Array<Reply> = []
  const received: Array<Recorded> = []
  let fallback: Reply = notScripted

  const server = yield* Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer((request, response) => {
        const pieces: Array<Buffer> = []
        request.on("data", (piece: Buffer) => pieces.push(piece))
        request.on("end", () => {
          const raw = Buffer.concat(pieces).toString("utf8")
          const recorded: Recorded = {
            method: request.method ?? "",
            path: request.url ?? "",
            headers: request.headers,
            raw,
            body: parse(raw)
          }
          received.push(recorded)
          arrivals.unsafeOffer(recorded)
          const reply = script.shift() ?? fallback
          reply(request, response, recorded.body)
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  const { port } = server.address() as AddressInfo // `listen` on a TCP port always yields an AddressInfo

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    reply: (...replies) => Effect.sync(() => void script.push(...replies)),
    otherwise: (reply) =>
      Effect.sync(() => {
        fallback = reply
      }),
    requests: Effect.sync(() => [...received]),
    takeRequest: Queue.take(arrivals)
  }
})
