/**
 * Writing to the terminal: raw writes (streamed text has no newline), and colours only when the stream is a
 * terminal and `NO_COLOR` is unset.
 */
import { Effect } from "effect"

const colourful = (stream: NodeJS.WriteStream): boolean =>
  stream.isTTY === true && (process.env.NO_COLOR ?? "") === "" && process.env.TERM !== "dumb"

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
