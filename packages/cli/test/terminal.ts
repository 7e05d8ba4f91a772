/**
 * A real terminal for tests, from npm packages alone: the command runs in a pseudo-terminal (`@lydell/node-pty`,
 * prebuilt, so no system package and no native build), and what it prints is rendered by a headless xterm.js, so
 * `screen` reads what a person would see — the scrollback included, rows the terminal wrapped joined back into their
 * line. Keys are sent as the bytes a terminal sends for them.
 */
import * as Pty from "@lydell/node-pty"
import * as Xterm from "@xterm/headless"
import { Effect, type Scope } from "effect"

/** The keys the tests press. */
export type Key = "Enter" | "Escape" | "BSpace" | "Tab" | "Up" | "Down" | "Left" | "Right" | "C-c" | "C-d"

export interface Terminal {
  /** The process the terminal runs (the command is `exec`ed: no shell stays in between). */
  readonly pid: number
  /** The screen and its scrollback, one line per line of output (wrapped rows joined), trailing blanks trimmed. */
  readonly screen: () => string
  /** Types `text` as it is. */
  readonly type: (text: string) => Effect.Effect<void>
  readonly press: (...keys: ReadonlyArray<Key>) => Effect.Effect<void>
  /** Types `text`, then presses Enter. */
  readonly send: (text: string) => Effect.Effect<void>
  /** Waits until the screen shows `text`, and returns the screen; dies with the screen after `seconds`. */
  readonly waitFor: (
    text: string | { readonly test: (screen: string) => boolean },
    seconds?: number
  ) => Effect.Effect<string>
}

export interface Options {
  /** A shell command line; it is run as `exec <command>`. */
  readonly command: string
  readonly cwd: string
  readonly columns?: number
  readonly rows?: number
}

/** Opens a terminal running `command`; the process is killed when the scope closes. */
export const open = (options: Options): Effect.Effect<Terminal, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const columns = options.columns ?? 160
      const rows = options.rows ?? 50
      const term = new Xterm.Terminal({ cols: columns, rows, scrollback: 1_000, allowProposedApi: true })
      const child = Pty.spawn("/bin/sh", ["-c", `exec ${options.command}`], {
        name: "xterm-256color",
        cols: columns,
        rows,
        cwd: options.cwd,
        env: process.env as Record<string, string>
      })
      child.onData((data) => term.write(data))
      const exit: { status?: string } = {}
      child.onExit(({ exitCode, signal }) => {
        exit.status = signal ? `the process was killed by signal ${signal}` : `the process exited with code ${exitCode}`
      })
      return { term, child, exit }
    }),
    ({ child, term }) =>
      Effect.sync(() => {
        try {
          child.kill("SIGKILL")
        } catch {
          // already gone
        }
        term.dispose()
      })
  ).pipe(Effect.map(({ child, exit, term }): Terminal => {
    const screen = () => {
      const buffer = term.buffer.active
      const lines: Array<string> = []
      for (let i = 0; i < buffer.length; i++) {
        const line = buffer.getLine(i)
        if (line === undefined) continue
        const text = line.translateToString(true)
        if (line.isWrapped && lines.length > 0) lines[lines.length - 1] += text
        else lines.push(text)
      }
      return lines.map((line) => line.trimEnd()).join("\n").trimEnd()
    }
    const bytesOf = (key: Key): string => {
      // Cursor keys in the mode the program asked for (application mode: `ESC O`).
      const cursor = term.modes.applicationCursorKeysMode ? "\x1bO" : "\x1b["
      switch (key) {
        case "Enter":
          return "\r"
        case "Escape":
          return "\x1b"
        case "BSpace":
          return "\x7f"
        case "Tab":
          return "\t"
        case "Up":
          return `${cursor}A`
        case "Down":
          return `${cursor}B`
        case "Right":
          return `${cursor}C`
        case "Left":
          return `${cursor}D`
        case "C-c":
          return "\x03"
        case "C-d":
          return "\x04"
      }
    }
    const type = (text: string) => Effect.sync(() => child.write(text))
    // One write per key, as a person's presses arrive (a program may read a lone Escape only when it is alone).
    const press = (...keys: ReadonlyArray<Key>) =>
      Effect.forEach(keys, (key) => Effect.sync(() => child.write(bytesOf(key))), { discard: true })
    return {
      pid: child.pid,
      screen,
      type,
      press,
      send: (text) => Effect.zipRight(type(text), press("Enter")),
      waitFor: (text, seconds = 90) =>
        Effect.gen(function*() {
          for (let i = 0; i < seconds * 5; i++) {
            const now = screen()
            if (typeof text === "string" ? now.includes(text) : text.test(now)) return now
            yield* Effect.sleep("200 millis")
          }
          const status = exit.status ?? "the process still runs"
          return yield* Effect.die(
            new Error(`timed out waiting for ${String(text)} (${status}); the screen:\n${screen()}`)
          )
        })
    }
  }))
