/**
 * Runs a goal's verifier: a shell command in the workspace (`sh -c`, exit code 0 passes, stdout and stderr
 * interleaved as the output) or a registered Effect. A verifier that cannot run (spawn failure, unknown name, a
 * defect) fails the check with an output that says why: it never completes a goal by accident.
 */
import * as Command from "@effect/platform/Command"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { Cause, Chunk, Effect, Stream } from "effect"
import type { VerifierResult } from "../Goals.js"
import type { Goal, Verifier } from "../GoalState.js"

const decoder = new TextDecoder()

const runCommand = (command: string, cwd: string): Effect.Effect<VerifierResult, never, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function*() {
      const process = yield* Command.start(
        Command.make("sh", "-c", command).pipe(
          Command.workingDirectory(cwd),
          Command.stdin(Stream.empty)
        )
      )
      const [output, exitCode] = yield* Effect.all(
        [
          Stream.merge(process.stdout, process.stderr).pipe(
            Stream.runCollect,
            Effect.map((chunks) => Chunk.toReadonlyArray(chunks).map((bytes) => decoder.decode(bytes)).join(""))
          ),
          process.exitCode
        ],
        { concurrency: "unbounded" }
      )
      return {
        passed: exitCode === 0,
        output: `$ ${command}\n${output}${output.endsWith("\n") || output === "" ? "" : "\n"}(exit code ${exitCode})`
      }
    })
  ).pipe(
    Effect.catchAll((error) =>
      Effect.succeed({ passed: false, output: `$ ${command}\nthe verifier could not run: ${error.message}` })
    )
  )

/** Runs the verifier of `goal`. */
export const run = (
  verifier: Verifier,
  goal: Goal,
  options: {
    readonly workspace: string
    readonly verifiers: Readonly<Record<string, (goal: Goal) => Effect.Effect<VerifierResult>>>
  }
): Effect.Effect<VerifierResult, never, CommandExecutor> => {
  if (verifier.kind === "command") return runCommand(verifier.command, options.workspace)
  const registered = Object.hasOwn(options.verifiers, verifier.name) ? options.verifiers[verifier.name] : undefined
  if (registered === undefined) {
    return Effect.succeed({ passed: false, output: `no verifier is registered under the name "${verifier.name}"` })
  }
  return registered(goal).pipe(
    Effect.catchAllDefect((defect) =>
      Effect.succeed({
        passed: false,
        output: `the verifier "${verifier.name}" died: ${Cause.pretty(Cause.die(defect))}`
      })
    )
  )
}

/** Keeps the last `max` characters of `output`, with a marker saying how much was cut. */
export const truncate = (output: string, max: number): string =>
  output.length <= max ? output : `[… ${output.length - max} characters truncated …]\n${output.slice(-max)}`
