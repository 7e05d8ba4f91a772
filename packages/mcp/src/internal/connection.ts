/**
 * One configured server behind the official MCP SDK's client: connected when first needed, and connected again
 * when the last connection went down (the process exited, the server broke the protocol). Every failure of the
 * SDK is mapped here into `McpError`; the call's cancellation is the SDK's `AbortSignal`, which sends
 * `notifications/cancelled` to the server.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode, McpError as SdkError } from "@modelcontextprotocol/sdk/types.js"
import type { Duration, Scope } from "effect"
import { Deferred, Effect, Exit, Option, SynchronizedRef } from "effect"
import { McpError } from "../McpError.js"

/** A server as the connection needs it: its name, how to reach it, and the bound on one incoming message. */
export interface Target {
  readonly name: string
  readonly transport:
    | {
      readonly _tag: "stdio"
      readonly command: string
      readonly args: ReadonlyArray<string>
      readonly env?: Readonly<Record<string, string>> | undefined
      readonly cwd?: string | undefined
    }
    | { readonly _tag: "http"; readonly url: string; readonly headers?: Readonly<Record<string, string>> | undefined }
  /** How long connecting (spawn and handshake) and each call may take. */
  readonly timeout: Duration.Duration
  /** The largest message read from a stdio server, in bytes; a larger one is a `Protocol` error. */
  readonly maxMessageBytes: number
}

/** A live connection, and what took it down (completed by the SDK's callbacks, first cause wins). */
interface Live {
  readonly client: Client
  readonly down: Deferred.Deferred<McpError>
}

/** The SDK's own request timeout is disabled (the largest `setTimeout` delay): Effect's timeout governs. */
const noSdkTimeout = 2_147_483_647

/** The most lines of a stdio server's standard error kept to explain its exit. */
const stderrLines = 20

/** The most tools listed from one server. */
const maxTools = 1000

export interface Connection {
  /** The server's tools (connects if needed). */
  readonly listTools: Effect.Effect<ReadonlyArray<Tool>, McpError>
  /** Calls a tool (connects, or reconnects after the last connection went down). Interruption cancels it. */
  readonly callTool: (
    name: string,
    args: Readonly<Record<string, unknown>>
  ) => Effect.Effect<CallToolResult, McpError>
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const makeTransport = (target: Target, stderr: Array<string>): Transport => {
  const transport = target.transport
  if (transport._tag === "http") {
    return new StreamableHTTPClientTransport(
      new URL(transport.url),
      transport.headers === undefined ? undefined : { requestInit: { headers: { ...transport.headers } } }
    )
  }
  const stdio = new StdioClientTransport({
    command: transport.command,
    args: [...transport.args],
    ...(transport.env === undefined ? {} : { env: { ...transport.env } }),
    ...(transport.cwd === undefined ? {} : { cwd: transport.cwd }),
    stderr: "pipe",
    maxBufferSize: target.maxMessageBytes
  })
  // The last lines of standard error, to say why a server exited; the pipe is drained so a chatty server never
  // blocks on it.
  stdio.stderr?.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") stderr.push(line)
    stderr.splice(0, Math.max(0, stderr.length - stderrLines))
  })
  return stdio
}

const closeClient = (client: Client) => Effect.promise(() => client.close().catch(() => undefined))

/** Connects to the server: spawns or reaches it, and completes the MCP handshake, within the timeout. */
const connect = (target: Target): Effect.Effect<Live, McpError> =>
  Effect.gen(function*() {
    const down = yield* Deferred.make<McpError>()
    const stderr: Array<string> = []
    const client = new Client({ name: "harness", version: "0.0.0" }, { capabilities: {} })
    const fail = (error: McpError) => Deferred.unsafeDone(down, Exit.succeed(error))
    // Any error the SDK reports on a live connection (a line that is not JSON-RPC, a response to an unknown id, a
    // message over the bound) means the server cannot be trusted with the calls in flight: the connection is
    // dropped, which fails them, and the next call connects again.
    client.onerror = (error) => {
      fail(
        new McpError({
          reason: "Protocol",
          server: target.name,
          message: `the MCP server "${target.name}" broke the protocol (${describe(error)}); ` +
            `its connection was dropped and the next call starts it again`
        })
      )
      void client.close().catch(() => undefined)
    }
    client.onclose = () => {
      const tail = stderr.length === 0 ? "" : `; its last output: ${stderr.join(" | ")}`
      fail(
        new McpError({
          reason: "Closed",
          server: target.name,
          message: `the MCP server "${target.name}" closed the connection${tail}; the next call starts it again`
        })
      )
    }
    const transport = yield* Effect.try({
      try: () => makeTransport(target, stderr),
      catch: (error) =>
        new McpError({
          reason: "Connect",
          server: target.name,
          message: `cannot start the MCP server "${target.name}": ${describe(error)}`
        })
    })
    yield* Effect.tryPromise({
      try: (signal) => client.connect(transport, { signal, timeout: noSdkTimeout }),
      catch: (error) =>
        new McpError({
          reason: "Connect",
          server: target.name,
          message: `cannot connect to the MCP server "${target.name}": ${describe(error)}`
        })
    }).pipe(
      Effect.timeoutFail({
        duration: target.timeout,
        onTimeout: () =>
          new McpError({
            reason: "Connect",
            server: target.name,
            message: `the MCP server "${target.name}" did not complete the MCP handshake in time`
          })
      }),
      Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : closeClient(client)))
    )
    return { client, down }
  })

/** Maps what a rejected SDK request means, given what took the connection down (if anything did). */
const mapFailure = (target: Target, live: Live, what: string) => (error: unknown) =>
  Effect.flatMap(Deferred.poll(live.down), (down) => {
    if (Option.isSome(down)) return down.value
    if (error instanceof SdkError) {
      if (error.code === ErrorCode.ConnectionClosed) {
        return Effect.succeed(
          new McpError({
            reason: "Closed",
            server: target.name,
            message: `the MCP server "${target.name}" closed the connection; the next call starts it again`
          })
        )
      }
      return Effect.succeed(
        new McpError({
          reason: "ServerError",
          server: target.name,
          message: `the MCP server "${target.name}" refused ${what}: ${error.message}`
        })
      )
    }
    return Effect.succeed(
      new McpError({
        reason: "Protocol",
        server: target.name,
        message: `the MCP server "${target.name}" answered ${what} with something that is not a valid answer: ${
          describe(error)
        }`
      })
    )
  })

/**
 * A connection to one server, owned by the scope: the live client is closed when the scope closes.
 *
 * Contract: connecting is serialized; a call made after the connection went down connects again (a stdio server is
 * started again); a call fails with `Closed` or `Protocol` as soon as its connection goes down, and with `Timeout`
 * after `timeout` (the server gets `notifications/cancelled`).
 */
export const make = (target: Target): Effect.Effect<Connection, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state = yield* SynchronizedRef.make(Option.none<Live>())
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(
        SynchronizedRef.get(state),
        Option.match({ onNone: () => Effect.void, onSome: (live) => closeClient(live.client) })
      )
    )
    const live: Effect.Effect<Live, McpError> = SynchronizedRef.modifyEffect(state, (current) =>
      Effect.flatMap(
        Option.isSome(current) ? Deferred.isDone(current.value.down) : Effect.succeed(true),
        (stale) =>
          !stale && Option.isSome(current)
            ? Effect.succeed([current.value, current] as const)
            : Effect.zipRight(
              Option.isSome(current) ? closeClient(current.value.client) : Effect.void,
              Effect.map(connect(target), (next) => [next, Option.some(next)] as const)
            )
      ))

    /** Runs one request on the live connection: fails as soon as the connection goes down, or at the timeout. */
    const request = <A>(what: string, run: (client: Client, signal: AbortSignal) => Promise<A>) =>
      Effect.flatMap(live, (connection) =>
        Effect.tryPromise({
          try: (signal) => run(connection.client, signal),
          catch: (error) => error
        }).pipe(
          Effect.catchAll((error) => Effect.flatMap(mapFailure(target, connection, what)(error), Effect.fail)),
          Effect.raceFirst(Effect.flatMap(Deferred.await(connection.down), Effect.fail)),
          Effect.timeoutFail({
            duration: target.timeout,
            onTimeout: () =>
              new McpError({
                reason: "Timeout",
                server: target.name,
                message: `the MCP server "${target.name}" did not answer ${what} in time; the call was cancelled`
              })
          })
        ))

    const listTools = request("tools/list", async (client, signal) => {
      const tools: Array<Tool> = []
      let cursor: string | undefined = undefined
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: noSdkTimeout })
        for (const tool of page.tools) tools.push(tool)
        cursor = page.nextCursor
      } while (cursor !== undefined && tools.length < maxTools)
      return tools.slice(0, maxTools)
    })

    const callTool = (name: string, args: Readonly<Record<string, unknown>>) =>
      request(
        `the call of "${name}"`,
        (client, signal) =>
          client.callTool({ name, arguments: { ...args } }, undefined, { signal, timeout: noSdkTimeout }).then(
            // `callTool` may also answer in the protocol's older `toolResult` form; it is not a tools result here.
            (result): CallToolResult => {
              if (!("content" in result)) throw new Error("the result has no content")
              return result as CallToolResult
            }
          )
      )

    return { listTools, callTool }
  })
