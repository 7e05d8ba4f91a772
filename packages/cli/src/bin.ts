/**
 * The `harness` executable's wiring: the command line over Node's context, exit codes, and nothing else.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Exit } from "effect"
import * as Cli from "./Cli.js"

const main = Cli.run(process.argv).pipe(
  Effect.catchAll((failure) =>
    Effect.gen(function*() {
      const line = Cli.describeFailure(failure)
      if (line !== undefined) yield* Console.error(line)
      process.exitCode = Cli.exitCode(failure)
    })
  ),
  Cli.plainWhenNotATerminal,
  Effect.provide(NodeContext.layer)
)

// A reader that stops early (`harness sessions export <id> | head`) closes the pipe: that ends the output, quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0)
    throw error
  })
}

NodeRuntime.runMain(main, {
  disableErrorReporting: false,
  teardown: (exit, onExit) =>
    onExit(Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? 1 : Number(process.exitCode ?? 0))
})
