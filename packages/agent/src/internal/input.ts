/**
 * Caller values, copied before anything reads them twice. Whatever a caller passes to the agent (a message, send
 * options, a batch, a cancel cause, an id) is first copied here into plain, bounded data: own enumerable data
 * properties only, a depth and a size limit, every read guarded. Only the copy is decoded with a schema
 * (`message.ts`), so no caller value — a throwing getter, a Proxy, a class instance, an object inheriting a valid
 * one, nesting thousands of levels deep, a string too long to log — can throw through an operation or be accepted
 * and fail later (ADR 0018).
 */

/**
 * The bounds of one copy.
 *
 * - `maxDepth`: the deepest nesting accepted (the root is depth 0, its properties depth 1).
 * - `maxChars`: the most characters the value's JSON encoding may take (so anything accepted can be logged: a
 *   store writes it as one JSON record, and a string longer than the engine's limit cannot be built at all).
 * - `maxValues`: the most values (objects, arrays, strings, numbers, …) it may hold, so the copy's own work is
 *   bounded too (a small object can reference one subtree many times; JSON would write it each time).
 */
export interface Limits {
  readonly maxDepth: number
  readonly maxChars: number
  readonly maxValues: number
}

/**
 * The bounds of one message: 64 levels, 16 MiB of encoded JSON (a control character counts six, `\u0001`) and
 * 100 000 values.
 */
export const messageLimits: Limits = { maxDepth: 64, maxChars: 16 * 1024 * 1024, maxValues: 100_000 }

/**
 * Plain data: what a copy holds. `undefined` is kept (an optional field a caller spelled out); whether a value is
 * valid is the schema's business, decided on the copy.
 */
export type Plain =
  | undefined
  | null
  | boolean
  | number
  | string
  | ReadonlyArray<Plain>
  | { readonly [key: string]: Plain }

/**
 * Why a value could not be copied.
 *
 * - `not-plain`: something that is not plain data — a class instance, an object whose prototype is not
 *   `Object.prototype` or `null` (`Object.create(valid)` included), a function, a symbol, a bigint, an array with
 *   holes or extra properties, a symbol key.
 * - `accessor`: a getter or setter where a data property must be.
 * - `cycle`: the value contains itself.
 * - `too-deep`: nested deeper than `maxDepth`.
 * - `too-large`: its JSON encoding would exceed `maxChars`, or it holds more than `maxValues` values.
 * - `unreadable`: reading it threw (a Proxy trap, a revoked Proxy).
 */
export type IssueReason = "not-plain" | "accessor" | "cycle" | "too-deep" | "too-large" | "unreadable"

/**
 * What was wrong and where: `path` as `a.b[2]` (`the value` for the root), `message` a sentence naming both.
 */
export interface Issue {
  readonly reason: IssueReason
  readonly path: string
  readonly message: string
}

const renderPath = (path: ReadonlyArray<string | number>): string =>
  path.length === 0
    ? "the value"
    : path.map((
      p
    ) => (typeof p === "number" ? `[${p}]` : /^[A-Za-z_$][\w$]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`))
      .join("")
      .replace(/^\./, "")

/** The characters `JSON.stringify` writes for a string, quotes included. */
const encodedLength = (s: string): number => {
  let n = 2
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d) n += 2
    else if (c < 0x20) n += 6
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 2
        i++
      } else n += 6 // a lone surrogate is written as `\udXXX`
    } else if (c >= 0xdc00 && c <= 0xdfff) n += 6
    else n += 1
  }
  return n
}

const kindOf = (u: unknown): string => {
  switch (typeof u) {
    case "function":
      return "a function"
    case "symbol":
      return "a symbol"
    case "bigint":
      return "a bigint"
    default:
      return typeof u
  }
}

class Refused {
  constructor(readonly reason: IssueReason, readonly what: string) {}
}
const unreadable = () => new Refused("unreadable", "unreadable: reading it threw")

/** A property's descriptor, read once (a Proxy's trap runs once; a getter is never called). */
const descriptorOf = (v: object, key: string | symbol): PropertyDescriptor | undefined => {
  try {
    return Reflect.getOwnPropertyDescriptor(v, key)
  } catch {
    throw unreadable()
  }
}

/** A data property's value; an accessor is refused. */
const dataOf = (d: PropertyDescriptor): unknown => {
  if (d.get !== undefined || d.set !== undefined || !("value" in d)) {
    throw new Refused("accessor", "a getter or setter, not a data property")
  }
  return d.value
}

/** Names what an object with a foreign prototype is, for the refusal. */
const notPlainName = (proto: unknown): string => {
  let name: unknown
  try {
    const ctor = proto === undefined || proto === null
      ? undefined
      : Reflect.getOwnPropertyDescriptor(proto, "constructor")
    name = typeof ctor?.value === "function" ? Reflect.getOwnPropertyDescriptor(ctor.value, "name")?.value : undefined
  } catch {
    name = undefined
  }
  return typeof name === "string" && name !== "" && name !== "Object"
    ? `an instance of ${name}, not a plain object`
    : "an object whose prototype is not Object.prototype (e.g. made by Object.create), not a plain object"
}

/**
 * One copy's running state: what it has spent, where it is (`path`, for the refusal) and what encloses it
 * (`ancestors`, at most `maxDepth` of them, for the cycle check). Methods, not closures made per object: a copy runs
 * for every message accepted, and a closure pair and a `Set` per copied object made it ~4× slower (ADR 0042).
 */
class Copier {
  chars = 0
  values = 0
  readonly path: Array<string | number> = []
  readonly ancestors: Array<object> = []
  constructor(readonly limits: Limits) {}
  spend(n: number) {
    this.chars += n
    if (this.chars > this.limits.maxChars) {
      throw new Refused("too-large", `larger than the limit of ${this.limits.maxChars} characters of encoded JSON`)
    }
  }
  go(v: unknown, depth: number): Plain {
    if (++this.values > this.limits.maxValues) {
      throw new Refused("too-large", `more values than the limit of ${this.limits.maxValues}`)
    }
    switch (typeof v) {
      case "undefined":
        this.spend(4) // at worst `null` in an array
        return undefined
      case "boolean":
        this.spend(5)
        return v
      case "number":
        this.spend(24)
        return v
      case "string":
        // Every character costs at least one: refuse a string that is too long before scanning it.
        if (v.length + 2 > this.limits.maxChars - this.chars) this.spend(v.length + 2)
        this.spend(encodedLength(v))
        return v
      case "object":
        if (v === null) {
          this.spend(4)
          return null
        }
        return this.container(v, depth)
      default:
        throw new Refused("not-plain", kindOf(v))
    }
  }
  container(v: object, depth: number): Plain {
    if (this.ancestors.includes(v)) throw new Refused("cycle", "a cycle (the value contains itself)")
    if (depth >= this.limits.maxDepth) {
      throw new Refused("too-deep", `nested deeper than the limit of ${this.limits.maxDepth} levels`)
    }
    let proto: unknown
    let isArray: boolean
    let keys: Array<string | symbol>
    try {
      isArray = Array.isArray(v)
      proto = Object.getPrototypeOf(v)
      keys = Reflect.ownKeys(v)
    } catch {
      throw unreadable()
    }
    this.ancestors.push(v)
    const out = isArray ? this.array(v, proto, keys, depth) : this.object(v, proto, keys, depth)
    this.ancestors.pop()
    return out
  }
  array(v: object, proto: unknown, keys: Array<string | symbol>, depth: number): Plain {
    if (proto !== Array.prototype) throw new Refused("not-plain", "an array of a subclass of Array")
    const length = descriptorOf(v, "length")?.value
    if (typeof length !== "number" || !Number.isSafeInteger(length) || length < 0) {
      throw new Refused("unreadable", "an array without a readable length")
    }
    this.spend(2 + Math.max(0, length - 1))
    let indices = 0
    for (const key of keys) {
      if (key === "length") continue
      if (typeof key === "symbol") {
        if (descriptorOf(v, key)?.enumerable === true) throw new Refused("not-plain", "an array with a symbol key")
        continue
      }
      const index = Number(key)
      if (!(Number.isSafeInteger(index) && index >= 0 && String(index) === key && index < length)) {
        throw new Refused("not-plain", `an array with a property "${key}" besides its elements`)
      }
      indices++
    }
    const out: Array<Plain> = []
    for (let i = 0; i < length; i++) {
      this.path.push(i)
      const d = descriptorOf(v, String(i))
      if (d === undefined) throw new Refused("not-plain", "a hole in a sparse array")
      out.push(this.go(dataOf(d), depth + 1))
      this.path.pop()
    }
    if (indices !== length) throw new Refused("not-plain", "an array whose elements changed while it was read")
    return Object.freeze(out)
  }
  object(v: object, proto: unknown, keys: Array<string | symbol>, depth: number): Plain {
    if (proto !== Object.prototype && proto !== null) throw new Refused("not-plain", notPlainName(proto))
    this.spend(2)
    const out: Record<string, Plain> = {}
    let first = true
    for (const key of keys) {
      const d = descriptorOf(v, key)
      if (d === undefined || d.enumerable !== true) continue
      if (typeof key === "symbol") throw new Refused("not-plain", "an object with a symbol key")
      this.path.push(key)
      const value = dataOf(d)
      if (value !== undefined) {
        this.spend(encodedLength(key) + (first ? 1 : 2))
        first = false
      }
      const item = this.go(value, depth + 1)
      this.path.pop()
      // Assignment keeps the copy a fast-mode object (`defineProperty` on every key made it a dictionary, slow to
      // read); `out["__proto__"] = …` would set the prototype and drop the key, so that one key is defined.
      if (key === "__proto__") {
        Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
      } else out[key] = item
    }
    return Object.freeze(out)
  }
}

/**
 * Copies a caller's value into frozen plain data, or says what was wrong with it.
 *
 * Contract: never throws, whatever `u` is; reads each property of `u` once (through its property descriptor, so a
 * getter is never called and a Proxy's traps run at most once per key); the copy shares nothing with `u`. Accepted:
 * `undefined`, `null`, booleans, numbers, strings, arrays whose prototype is `Array.prototype` with no holes and no
 * properties besides their indices, and objects whose prototype is `Object.prototype` or `null`, with own
 * enumerable data properties under string keys (non-enumerable own properties are not copied, as `JSON.stringify`
 * ignores them). A Proxy that behaves as plain data is copied as the data it showed.
 */
export const copy = (
  u: unknown,
  limits: Limits = messageLimits
): { readonly value: Plain } | { readonly issue: Issue } => {
  const copier = new Copier(limits)
  try {
    return { value: copier.go(u, 0) }
  } catch (e) {
    const where = renderPath(copier.path)
    if (!(e instanceof Refused)) {
      return { issue: { reason: "unreadable", path: where, message: `${where} could not be read` } }
    }
    return { issue: { reason: e.reason, path: where, message: `${where} is ${e.what}` } }
  }
}
