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

/** A long-running `harness` command started by {@link started}. */
export interface Started {
  /** What it wrote to standard output so far. */
  readonly stdout: () => string
  /** What it wrote to standard error so far. */
  readonly stderr: () => string
  /** Ctrl-C (`SIGINT`); resolves with its exit code. */
  readonly stop: () => Promise<number | null>
  /** `SIGKILL`; resolves once it is gone. */
  readonly kill: () => Promise<void>
}

/**
 * Starts `harness ...args` in `cwd`; resolves once it printed a line on standard output and `banner` on standard
 * error (in either order), and rejects if it exits before.
 */
export const started = (
  cwd: string,
  env: Record<string, string>,
  args: ReadonlyArray<string>,
  banner: string
) =>
  new Promise<Started>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd, env: cleanEnv(env) })
    let stdout = ""
    let stderr = ""
    const ready = () => {
      if (!stdout.includes("\n") || !stderr.includes(banner)) return
      resolve({
        stdout: () => stdout,
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
    child.on("exit", (code) => reject(new Error(`harness ${args.join(" ")} exited with ${code}: ${stderr}`)))
  })

/** Starts `harness serve` in `cwd`; resolves with its URL (its first line of output) and a way to stop it. */
export const serve = (cwd: string, env: Record<string, string>, args: ReadonlyArray<string> = []) =>
  started(cwd, env, ["serve", "--port", "0", ...args], "Ctrl-C stops the server").then((server) => ({
    ...server,
    url: server.stdout().split("\n")[0]!
  }))

/** Reads a response's body as text until it holds `marker` (or ends), then cancels the rest; answers what it read. */
export const readUntil = async (response: Response, marker: string): Promise<string> => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let text = ""
  while (!text.includes(marker)) {
    const { done, value } = await reader.read()
    if (done) break
    text += value
  }
  await reader.cancel()
  return text
}

/** Calls a route of a server with a bearer token; answers the status and the decoded JSON body. */
export const call = async (url: string, token: string, method: string, body?: unknown) => {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: await response.json() as unknown }
}

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
