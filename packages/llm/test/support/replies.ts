/**
 * Replies for the fake server: SSE streams in the exact wire format, JSON bodies, and faults (a connection cut
 * mid-stream, a stream that stalls, a server that never answers).
 */
import type { Reply } from "./FakeServer.js"

export interface SseOptions {
  /**
   * How the response ends after the frames: `close` ends it normally, `cut` destroys the socket (a connection
   * reset mid-stream), `stall` keeps it open and silent until the server stops.
   */
  readonly end?: "close" | "cut" | "stall"
  readonly headers?: Readonly<Record<string, string>>
}

/** A 200 `text/event-stream` response writing each frame (text or raw bytes) as its own write. */
export const sse = (frames: ReadonlyArray<string | Uint8Array>, options: SseOptions = {}): Reply => (_, response) => {
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    ...options.headers
  })
  response.flushHeaders()
  const writeFrom = (index: number): void => {
    if (index < frames.length) {
      response.write(frames[index], () => setImmediate(() => writeFrom(index + 1)))
      return
    }
    switch (options.end ?? "close") {
      case "close":
        response.end()
        return
      case "cut":
        response.socket?.destroy()
        return
      case "stall":
        return
    }
  }
  writeFrom(0)
}

/** A JSON response with a status. */
export const json = (
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {}
): Reply =>
(_, response) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

/** Never answers (not even headers) until the server stops. */
export const hang: Reply = () => {}

/** A 401 whose body echoes the `Authorization` header it received (a careless proxy). */
export const echoAuthorization: Reply = (request, response) => {
  response.writeHead(401, { "content-type": "application/json" })
  response.end(JSON.stringify({
    error: { message: `Authentication failed for header: ${request.headers.authorization ?? "none"}` }
  }))
}

/** Any status, headers and body text, as given. */
export const raw = (
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string | Uint8Array
): Reply =>
(_, response) => {
  response.writeHead(status, headers)
  response.end(body)
}

/**
 * A 200 event stream that writes `head` and then `tick` again and again, one write per `everyMs` of real time,
 * until the client goes away or the server stops (a keep-alive loop, a trickled line, endless progress).
 */
export const forever = (
  head: ReadonlyArray<string>,
  tick: (n: number) => string,
  everyMs = 20
): Reply =>
(_, response) => {
  response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" })
  for (const frame of head) response.write(frame)
  let n = 0
  const timer = setInterval(() => {
    if (response.destroyed || response.writableEnded) return clearInterval(timer)
    response.write(tick(n++))
  }, everyMs)
  response.on("close", () => clearInterval(timer))
}
