/**
 * Writing to the terminal: raw writes (streamed text has no newline), and colours only when the stream is a
 * terminal and `NO_COLOR` is unset.
 */
import type { Console } from "effect"
import { Effect } from "effect"

const colourful = (stream: NodeJS.WriteStream): boolean =>
  stream.isTTY === true && (process.env.NO_COLOR ?? "") === "" && process.env.TERM !== "dumb"

const sgrCodes = new RegExp(String.raw`\x1b\[[0-9;]*m`, "g")

/** Removes colour codes (SGR) from text; cursor movement is kept. */
export const uncoloured = (text: string): string => text.replace(sgrCodes, "")

const strip = (stream: NodeJS.WriteStream) => (arg: unknown): unknown =>
  typeof arg === "string" && !colourful(stream) ? uncoloured(arg) : arg

/**
 * The console with colour codes removed from what goes to a stream that is not a colour terminal (`@effect/cli`
 * colours its help and its validation errors whatever the stream is).
 */
export const plainConsole: Effect.Effect<Console.Console> = Effect.map(Effect.console, (base): Console.Console => {
  const out = strip(process.stdout)
  const err = strip(process.stderr)
  return {
    ...base,
    log: (...args) => base.log(...args.map(out)),
    info: (...args) => base.info(...args.map(out)),
    debug: (...args) => base.debug(...args.map(out)),
    error: (...args) => base.error(...args.map(err)),
    warn: (...args) => base.warn(...args.map(err)),
    unsafe: {
      ...base.unsafe,
      log: (...args) => base.unsafe.log(...args.map(out)),
      info: (...args) => base.unsafe.info(...args.map(out)),
      debug: (...args) => base.unsafe.debug(...args.map(out)),
      error: (...args) => base.unsafe.error(...args.map(err)),
      warn: (...args) => base.unsafe.warn(...args.map(err))
    }
  }
})

/** Writes to standard output as is. */
export const out = (text: string): Effect.Effect<void> => Effect.sync(() => void process.stdout.write(text))

/** Writes to standard error as is. */
export const err = (text: string): Effect.Effect<void> => Effect.sync(() => void process.stderr.write(text))

const sgr = (open: number, close: number) => (stream: NodeJS.WriteStream) => (text: string): string =>
  colourful(stream) ? `\x1b[${open}m${text}\x1b[${close}m` : text

/** Styles for one stream: each is the identity when the stream is not a colour terminal. */
export const styles = (stream: NodeJS.WriteStream) => ({
  dim: sgr(2, 22)(stream),
  bold: sgr(1, 22)(stream),
  red: sgr(31, 39)(stream),
  green: sgr(32, 39)(stream),
  yellow: sgr(33, 39)(stream),
  magenta: sgr(35, 39)(stream),
  cyan: sgr(36, 39)(stream)
})
