/**
 * Writing to the terminal: raw writes (streamed text has no newline), and colours only when the stream is a
 * terminal and `NO_COLOR` is unset.
 */
import type { Console } from "effect"
import { Effect, FiberRef, HashMap, HashSet, Layer, Logger } from "effect"
import { redactText } from "./redact.js"

const colourful = (stream: NodeJS.WriteStream): boolean =>
  stream.isTTY === true && (process.env.NO_COLOR ?? "") === "" && process.env.TERM !== "dumb"

const sgrCodes = new RegExp(String.raw`\x1b\[[0-9;]*m`, "g")

/** Removes colour codes (SGR) from text; cursor movement is kept. */
const uncoloured = (text: string): string => text.replace(sgrCodes, "")

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

const controls = new RegExp(
  String.raw`\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]`,
  "g"
)

/**
 * Text that came from a model, a tool or a file, safe to print on a terminal: control characters (escape sequences,
 * bells, carriage returns, bidirectional overrides) are shown as visible escapes (`\x1b`, `\r`, `\u202e`) instead
 * of acting on the terminal; line breaks and tabs stay, and CR LF becomes LF. JSON output never goes through this.
 */
export const visible = (text: string): string =>
  text.replace(controls, (c) => {
    if (c === "\r\n") return "\n"
    const code = c.charCodeAt(0)
    return code > 0xff
      ? `\\u${code.toString(16).padStart(4, "0")}`
      : code === 0x0d
      ? "\\r"
      : `\\x${code.toString(16).padStart(2, "0")}`
  })

/**
 * A message that may quote a provider, a store or a server (an error, a diagnostic) as it is printed: credentials in
 * URLs redacted (`redactText`), control characters visible.
 */
export const safe = (text: string): string => visible(redactText(text))

/** A log annotation as plain JSON: numbers, strings and booleans as they are, anything else as text. */
const annotationValue = (value: unknown): string | number | boolean =>
  typeof value === "number" || typeof value === "boolean" ? value : redactText(String(value))

const messageText = (message: unknown): string =>
  redactText(Array.isArray(message) ? message.map(String).join(" ") : String(message))

/**
 * The CLI's logger: diagnostics (a provider's retry warning, …) never go to standard output with the answer. With
 * `json`, each is one NDJSON line `{"type":"run/log",…}` on standard output (so `run --json` stays pure JSON);
 * otherwise one readable line on standard error, `harness: warning: … (retry=1, code=SERVER)`.
 */
export const diagnostics = (json: boolean): Layer.Layer<never> =>
  onlyLogger(
    Logger.make(({ annotations, logLevel, message }) => {
      const fields = Object.fromEntries(
        [...HashMap.toEntries(annotations)].map(([key, value]) => [key, annotationValue(value)] as const)
      )
      if (json) {
        process.stdout.write(
          `${
            JSON.stringify({
              type: "run/log",
              level: logLevel.label,
              message: messageText(message),
              annotations: fields
            })
          }\n`
        )
        return
      }
      const detail = Object.entries(fields).map(([key, value]) => `${key}=${String(value)}`).join(", ")
      process.stderr.write(
        `harness: ${logLevel.label.toLowerCase()}: ${visible(messageText(message))}${
          detail === "" ? "" : ` (${visible(detail)})`
        }\n`
      )
    })
  )

/**
 * `logger` in place of the loggers that print: the default one and the pretty one `NodeRuntime.runMain` installs
 * (which writes to standard output). Other loggers (the tracer's) stay.
 */
const onlyLogger = (logger: Logger.Logger<unknown, void>): Layer.Layer<never> =>
  Layer.fiberRefLocallyScopedWith(FiberRef.currentLoggers, replacePrinters(logger))

/** The loggers with `logger` in place of the default and the pretty one. */
export const replacePrinters = (logger: Logger.Logger<unknown, void>) =>
(
  loggers: HashSet.HashSet<Logger.Logger<unknown, unknown>>
): HashSet.HashSet<Logger.Logger<unknown, unknown>> =>
  HashSet.add(HashSet.remove(HashSet.remove(loggers, Logger.defaultLogger), Logger.prettyLoggerDefault), logger)
