/**
 * Keeping secrets out of everything the provider hands back. A `Scrubber` knows the secret values (the API key and
 * every `Redacted` header value) and replaces each of them — as written, JSON-escaped, JSON-unescaped or URL-encoded, in any letter
 * case — wherever it occurs in a string, an array or a plain object. Truncation goes through {@link Scrubber.clip},
 * which scrubs first, so a cut can never leave the prefix of a secret behind.
 */

/** What replaces a secret. */
export const redactedText = "<redacted>"

/** Scrubs texts and values against a fixed set of secrets. */
export interface Scrubber {
  /** The text with every occurrence of every secret replaced by `<redacted>`. */
  readonly text: (text: string) => string
  /** {@link Scrubber.text}, then cut to `max` characters (with `…`): never the other way round. */
  readonly clip: (text: string, max: number) => string
  /**
   * A copy of `value` with every string scrubbed — strings, arrays and plain objects (keys too), recursively; other
   * objects are kept as they are. Contract: the shape and types are unchanged.
   */
  readonly deep: <A>(value: A) => A
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

// What a secret becomes when a server writes it, unescaped, inside a JSON string that is then decoded (tool
// arguments): its `\` escapes taken as JSON's. JSON's escape letters are lower-case only (`\n`, `\u00e9`), so the
// lower-cased secret decodes whenever any letter case of it does, and the patterns match in any case. Undefined when
// that is not valid JSON or changes nothing.
const unescaped = (secret: string): string | undefined => {
  if (!secret.includes("\\")) return undefined
  try {
    const value: unknown = JSON.parse(`"${secret.toLowerCase()}"`)
    return typeof value === "string" && value.length > 0 ? value : undefined
  } catch {
    return undefined
  }
}

// The forms a secret takes when a server echoes it back: raw, inside a JSON string, inside a URL, and decoded from a
// JSON string it was written into unescaped.
const forms = (secret: string): ReadonlyArray<string> => {
  const json = JSON.stringify(secret).slice(1, -1)
  const decoded = unescaped(secret)
  return [...new Set([secret, json, encodeURIComponent(secret), ...(decoded === undefined ? [] : [decoded])])]
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** A scrubber for `secrets` (empty values are ignored). */
export const make = (secrets: ReadonlyArray<string>): Scrubber => {
  const patterns = [...new Set(secrets.filter((secret) => secret.length > 0).flatMap(forms))]
    // Longest first, so a secret that contains another is replaced whole.
    .sort((a, b) => b.length - a.length)
  const pattern = patterns.length === 0 ? undefined : new RegExp(patterns.map(escapeRegExp).join("|"), "giu")
  const text = (input: string): string => (pattern === undefined ? input : input.replace(pattern, redactedText))
  const clip = (input: string, max: number): string => {
    const scrubbed = text(input)
    return scrubbed.length > max ? `${scrubbed.slice(0, max)}…` : scrubbed
  }
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return text(value)
    if (Array.isArray(value)) return value.map(walk)
    if (isPlainObject(value)) {
      const out: Record<string, unknown> = {}
      for (const [key, item] of Object.entries(value)) out[text(key)] = walk(item)
      return out
    }
    return value
  }
  // `walk` keeps every shape: strings stay strings, arrays arrays, plain objects plain objects.
  const deep = <A>(value: A): A => (pattern === undefined ? value : walk(value) as A)
  return { text, clip, deep }
}
