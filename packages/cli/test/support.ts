/**
 * Runs the real `harness` executable as a child process (through its bin script, as `npx harness` does) and
 * collects what a user would see.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** The bin script. */
export const bin = fileURLToPath(new URL("../bin/harness.mjs", import.meta.url))

export interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of a run: the parent's, without provider keys or Harness settings, plus `env`. */
export const cleanEnv = (env: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv => {
  const base: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(HARNESS_|LLM_|DEEPSEEK_)/.test(key)) continue
    base[key] = value
  }
  return { ...base, NO_COLOR: "1", HARNESS_OFFLINE_PACE_MS: "1", ...env }
}

/** Runs `harness ...args` in `cwd`, feeding `input` on standard input, and waits for it to exit. */
export const harness = (
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: Readonly<Record<string, string>>; readonly input?: string }
): Promise<Result> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: options.cwd, env: cleanEnv(options.env) })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text))
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.input ?? "")
  })

/** A fresh temporary directory, removed by the returned function. */
export const tempDir = (): readonly [string, () => void] => {
  const dir = mkdtempSync(join(tmpdir(), "harness-cli-"))
  return [dir, () => rmSync(dir, { recursive: true, force: true })]
}

/** One event of a chat-completions stream of `model`: a `delta`, with its `finish_reason` when the answer ends. */
export const chatChunk = (model: string, delta: object, finish: string | null = null): string =>
  `data: ${
    JSON.stringify({
      id: "c1",
      object: "chat.completion.chunk",
      created: 1,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }]
    })
  }\n\n`

/** Starts `harness serve` in `cwd`; resolves with its URL (its first line of output) and a way to stop it. */
export const serve = (cwd: string, env: Record<string, string>, args: ReadonlyArray<string> = []) =>
  new Promise<
    {
      readonly url: string
      readonly stderr: () => string
      readonly stop: () => Promise<number | null>
      readonly kill: () => Promise<void>
    }
  >(
    (resolve, reject) => {
      const child = spawn(process.execPath, [bin, "serve", "--port", "0", ...args], { cwd, env: cleanEnv(env) })
      let stdout = ""
      let stderr = ""
      // Ready once it printed its URL (standard output) and its banner (standard error), in either order.
      const ready = () => {
        if (!stdout.includes("\n") || !stderr.includes("Ctrl-C stops the server")) return
        resolve({
          url: stdout.split("\n")[0]!,
          stderr: () => stderr,
          stop: () =>
            new Promise((done) => {
              child.once("exit", (code) => done(code))
              child.kill("SIGINT")
            }),
          kill: () =>
            new Promise((done) => {
              child.once("exit", () => done())
              child.kill("SIGKILL")
            })
        })
      }
      child.stderr.setEncoding("utf8").on("data", (text: string) => {
        stderr += text
        ready()
      })
      child.stdout.setEncoding("utf8").on("data", (text: string) => {
        stdout += text
        ready()
      })
      child.on("exit", (code) => reject(new Error(`harness serve exited with ${code}: ${stderr}`)))
    }
  )

/**
 * What the line-mode chat scenario (`list the files`, `+grep TODO`, `/inject …`, `/sessions`, `/help` on standard
 * input) shows on the offline model, here or over `--remote` alike.
 */
export const lineChatLines: ReadonlyArray<string> = [
  "› list the files",
  "+ grep TODO (queued)",
  "+ context (the model sees it at its next step): the user is on a phone",
  "Noted: “the user is on a phone”.",
  "1 session (last active last):",
  "/goal set <objective> | show | pause | resume | clear",
  "⚙ [1] list_dir()",
  "⚙ [2] grep(",
  "notes.txt:2: TODO: write the tests"
]
