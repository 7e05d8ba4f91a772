/**
 * Test helpers: a real temporary workspace, and calling a tool's handler the way the agent loop does (decode the
 * raw arguments with the tool's parameter schema, then run the handler with a call context).
 */
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { FileSystem } from "@effect/platform/FileSystem"
import { Path } from "@effect/platform/Path"
import { assert } from "@effect/vitest"
import type { Agent, AgentTool } from "@harness/agent"
import { Ids } from "@harness/domain"
import { Chunk, Effect, Fiber, Option, Schema, TestClock, TestServices } from "effect"
import type { Scope } from "effect"
import { WorkspaceError } from "../src/WorkspaceError.js"
import * as WorkspaceTools from "../src/WorkspaceTools.js"

/**
 * The context a handler gets. These handlers never touch `agent`, so a bare object stands in for it (the cast is
 * the one way to get an `Agent.Service` without building an agent).
 */
const callContext: AgentTool.Context = {
  callId: Ids.ToolCallId.make("call-1"),
  agent: {} as Agent.Service
}

/** Finds a tool by name. */
export const toolNamed = (tools: ReadonlyArray<AgentTool.AgentTool<never>>, name: string) => {
  const tool = tools.find((candidate) => candidate.name === name)
  return tool === undefined ? Effect.dieMessage(`no tool named ${name}`) : Effect.succeed(tool)
}

/** Decodes raw arguments as the loop does and runs the handler; fails with the handler's failure. */
export const call = (tool: AgentTool.AgentTool<never>, raw: unknown): Effect.Effect<unknown, unknown> =>
  Effect.gen(function*() {
    // `parametersSchema` is typed as "any struct schema"; the tool's real schema decodes to its parameters.
    const decode = Schema.decodeUnknown(tool.tool.parametersSchema as Schema.Schema<unknown, unknown>)
    const params = yield* Effect.orDie(decode(raw))
    return yield* tool.handler(params, callContext)
  })

/** A workspace on a fresh temporary directory (removed with the scope) and its seven tools. */
export const setup = (
  limits?: Partial<WorkspaceTools.Limits>
): Effect.Effect<Harness, WorkspaceError, FileSystem | Path | CommandExecutor | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const path = yield* Path
    const root = yield* Effect.orDie(fs.makeTempDirectoryScoped({ prefix: "harness-tools-" }))
    const tools = yield* WorkspaceTools.make({ root, limits })
    const run = (name: string, raw: unknown) => Effect.flatMap(toolNamed(tools, name), (tool) => call(tool, raw))
    const text = (name: string, raw: unknown) =>
      Effect.flatMap(run(name, raw), (result) =>
        typeof result === "string" ? Effect.succeed(result) : Effect.dieMessage(`not a string: ${String(result)}`))
    const failure = (name: string, raw: unknown) =>
      Effect.matchEffect(run(name, raw), {
        onSuccess: (result) =>
          Effect.dieMessage(`expected a failure, got: ${String(result)}`),
        onFailure: (error) =>
          error instanceof WorkspaceError
            ? Effect.succeed(error)
            : Effect.dieMessage(`not a WorkspaceError: ${String(error)}`)
      })
    const write = (relative: string, content: string) =>
      Effect.orDie(
        Effect.zipRight(
          fs.makeDirectory(path.dirname(path.join(root, relative)), { recursive: true }),
          fs.writeFileString(path.join(root, relative), content)
        )
      )
    const read = (relative: string) =>
      Effect.orDie(fs.readFileString(path.join(root, relative)))
    return { root, tools, run, text, failure, write, read, abs: (relative: string) => path.join(root, relative) }
  })

/** What {@link setup} gives a test. */
export interface Harness {
  readonly root: string
  readonly tools: ReadonlyArray<AgentTool.AgentTool<never>>
  /** Runs a tool by name with raw (undecoded) arguments. */
  readonly run: (name: string, raw: unknown) => Effect.Effect<unknown, unknown>
  /** Runs a tool and requires a text result. */
  readonly text: (name: string, raw: unknown) => Effect.Effect<string, unknown>
  /** Runs a tool and requires it to fail with a `WorkspaceError`. */
  readonly failure: (name: string, raw: unknown) => Effect.Effect<WorkspaceError>
  /** Writes a file (and its directories) under the root, bypassing the tools. */
  readonly write: (relative: string, content: string) => Effect.Effect<void>
  readonly read: (relative: string) => Effect.Effect<string>
  readonly abs: (relative: string) => string
}

/**
 * Runs a shell call whose timeout waits on the `TestClock`, so the time a loaded machine takes to start the command
 * never counts against it: forks `call`, waits (real I/O, on the live clock) for `ready` and for the call's timeout to
 * be scheduled, then moves the clock to each next scheduled sleep (the timeout, the kill's polls and grace) until the
 * call returns. Returns its result and the test time it took.
 */
export const timingOut = <A, B, E, R, R2>(
  call: Effect.Effect<A, E, R>,
  timeoutSeconds: number,
  ready: Effect.Effect<B, never, R2>
) =>
  Effect.gen(function*() {
    const start = yield* TestClock.currentTimeMillis
    const fiber = yield* Effect.fork(call)
    const readied = yield* TestServices.provideLive(ready)
    const timeout = start + timeoutSeconds * 1000
    for (let i = 0; !Chunk.contains(yield* TestClock.sleeps(), timeout); i++) {
      if (i === 1000) assert.fail("the call's timeout was never scheduled")
      yield* TestServices.provideLive(Effect.sleep("20 millis"))
    }
    yield* TestClock.adjust(timeout - start)
    for (let i = 0; Option.isNone(yield* Fiber.poll(fiber)); i++) {
      if (i === 3000) assert.fail("the call did not return within a minute of its timeout")
      yield* TestServices.provideLive(Effect.sleep("20 millis"))
      const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps())
      if (sleeps.length > 0) {
        yield* TestClock.adjust(Math.max(Math.min(...sleeps) - (yield* TestClock.currentTimeMillis), 0))
      }
    }
    return { result: yield* Fiber.join(fiber), readied, took: (yield* TestClock.currentTimeMillis) - start }
  })
