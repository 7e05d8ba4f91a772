/**
 * Runs a goal's verifier: a shell command in the workspace (`sh -c`, exit code 0 passes, stdout and stderr
 * interleaved as the output) or a registered Effect. Every run has a time limit: a verifier that does not finish in
 * time fails the check with an output that says it timed out (a command is killed, with its process group). A
 * verifier that cannot run (spawn failure, unknown name, a defect) fails the check with an output that says why:
 * it never completes a goal by accident.
 */
import * as Command from "@effect/platform/Command"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { Cause, Duration, Effect, Ref, Stream } from "effect"
import type { VerifierResult } from "../Goals.js"
import type { Goal, Verifier } from "../GoalState.js"

const decoder = new TextDecoder()

const timedOut = (timeout: Duration.Duration) =>
  `(timed out after ${Duration.format(timeout)}: the verifier did not finish and counts as failed)`

const runCommand = (
  command: string,
  cwd: string,
  timeout: Duration.Duration
): Effect.Effect<VerifierResult, never, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function*() {
      const process = yield* Command.start(
        Command.make("sh", "-c", command).pipe(
          Command.workingDirectory(cwd),
          Command.stdin(Stream.empty)
        )
      )
      // Collected as it arrives, so a command that times out still shows what it printed.
      const collected = yield* Ref.make("")
      const finished = yield* Effect.all(
        [
          Stream.merge(process.stdout, process.stderr).pipe(
            Stream.runForEach((bytes) => Ref.update(collected, (text) => text + decoder.decode(bytes)))
          ),
          process.exitCode
        ],
        { concurrency: "unbounded" }
      ).pipe(Effect.timeout(timeout), Effect.option)
      const output = yield* Ref.get(collected)
      const shown = `$ ${command}\n${output}${output.endsWith("\n") || output === "" ? "" : "\n"}`
      if (finished._tag === "None") {
        // SIGKILL the process group at once; the scope's release then only waits for the exit.
        yield* Effect.ignore(process.kill("SIGKILL"))
        return { passed: false, output: `${shown}${timedOut(timeout)}` }
      }
      const exitCode = finished.value[1]
      return { passed: exitCode === 0, output: `${shown}(exit code ${exitCode})` }
    })
  ).pipe(
    Effect.catchAll((error) =>
      Effect.succeed({ passed: false, output: `$ ${command}\nthe verifier could not run: ${error.message}` })
    )
  )

/** Runs the verifier of `goal`, within `timeout`. */
export const run = (
  verifier: Verifier,
  goal: Goal,
  options: {
    readonly workspace: string
    readonly verifiers: Readonly<Record<string, (goal: Goal) => Effect.Effect<VerifierResult>>>
    readonly verifierTimeout: Duration.Duration
  }
): Effect.Effect<VerifierResult, never, CommandExecutor> => {
  const timeout = options.verifierTimeout
  if (verifier.kind === "command") return runCommand(verifier.command, options.workspace, timeout)
  const registered = Object.hasOwn(options.verifiers, verifier.name) ? options.verifiers[verifier.name] : undefined
  if (registered === undefined) {
    return Effect.succeed({ passed: false, output: `no verifier is registered under the name "${verifier.name}"` })
  }
  return registered(goal).pipe(
    Effect.timeoutTo({
      duration: timeout,
      onSuccess: (result): VerifierResult => result,
      onTimeout: (): VerifierResult => ({
        passed: false,
        output: `the verifier "${verifier.name}" ${timedOut(timeout)}`
      })
    }),
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
