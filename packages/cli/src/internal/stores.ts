/**
 * The session stores the CLI can open, as one table: how `--store` names each one, how it is shown, whether its
 * sessions outlive the command, and how its layer is built. A store's package is loaded only when its layer is
 * built, so the table loads with the settings at start-up. Adding a store is a member of `StoreLocation` and its row
 * here (the compiler asks for the row).
 */
import { FileSystem, Path } from "@effect/platform"
import type { SessionStore } from "@harness/session"
import { Effect, Layer, Redacted } from "effect"
import type { StoreLocation } from "../Settings.js"
import { loadedLayer } from "./loadedLayer.js"
import { redactUrl } from "./redact.js"

/** One kind of store: a row of the table. */
interface StoreKind<L extends StoreLocation> {
  /** How `--store` names it, as `harness --help` and `harness config --describe` show it. */
  readonly syntax: string
  /** A fuller example for the message about a `--store` the CLI cannot use (default: `syntax`). */
  readonly example?: string | undefined
  /**
   * The location `text` names when it names this kind; `undefined` when it does not, `{ invalid }` when it does but
   * cannot be used (why, in a few words, after the quoted text). `resolve` makes a path absolute.
   */
  readonly parse: (text: string, resolve: (path: string) => string) => L | { readonly invalid: string } | undefined
  /** The location as every command shows it: no credential. */
  readonly show: (location: L) => string
  /** Whether its sessions outlive the command (a printed follow-up command can find them). */
  readonly durable: boolean
  /** Whether its location holds a credential: a follow-up command leaves one from the environment there. */
  readonly secret: boolean
  /** The store, from its package (loaded now). */
  readonly layer: (
    location: L
  ) => Layer.Layer<SessionStore.SessionStore, SessionStore.SessionStoreError, FileSystem.FileSystem | Path.Path>
}

type Tag = StoreLocation["_tag"]
type LocationOf<K extends Tag> = Extract<StoreLocation, { readonly _tag: K }>

/** Creates the directory `filename` is in: SQLite creates its file, not the directory. */
export const parentDirectory = (filename: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    yield* fs.makeDirectory(path.dirname(filename), { recursive: true })
  })

/** A PostgreSQL database: `postgres://…` (or `postgresql://…`), kept redacted. */
export const postgresUrl = (
  text: string
): { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string> } | { readonly invalid: string } | undefined =>
  !/^postgres(ql)?:\/\//.test(text)
    ? undefined
    : URL.canParse(text)
    ? { _tag: "postgres", url: Redacted.make(text) }
    : { invalid: "is not a valid URL" }

/** A store at a path: `<prefix>:<path>`, the path taken from the current directory. */
export const atPath = <L>(prefix: string, noun: string, make: (path: string) => L) => {
  const pattern = new RegExp(`^${prefix}:(.*)$`)
  return (text: string, resolve: (path: string) => string): L | { readonly invalid: string } | undefined => {
    const location = pattern.exec(text)?.[1]
    if (location === undefined) return undefined
    return location.trim() === "" ? { invalid: `names no ${noun}` } : make(resolve(location))
  }
}

/** Every store, in the order help and errors list them. */
const stores: { readonly [K in Tag]: StoreKind<LocationOf<K>> } = {
  sqlite: {
    syntax: "sqlite:<file>",
    parse: atPath("sqlite", "file", (filename) => ({ _tag: "sqlite", filename })),
    show: (location) => `sqlite:${location.filename}`,
    durable: true,
    secret: false,
    layer: (location) =>
      loadedLayer(
        () => Promise.all([import("@harness/session"), import("@harness/store-sqlite")]),
        ([{ SessionStore }, { SqliteStore }]) =>
          Layer.unwrapEffect(
            parentDirectory(location.filename).pipe(
              Effect.mapError((e) =>
                new SessionStore.SessionStoreError({
                  reason: "Io",
                  message: `cannot create the directory of ${location.filename}: ${e.message}`
                })
              ),
              Effect.as(SqliteStore.layer({ filename: location.filename }))
            )
          )
      )
  },
  jsonl: {
    syntax: "jsonl:<directory>",
    parse: atPath("jsonl", "directory", (directory) => ({ _tag: "jsonl", directory })),
    show: (location) => `jsonl:${location.directory}`,
    durable: true,
    secret: false,
    layer: (location) =>
      loadedLayer(
        () => import("@harness/store-jsonl"),
        ({ JsonlStore }) => JsonlStore.layer({ directory: location.directory })
      )
  },
  postgres: {
    syntax: "postgres://…",
    example: "postgres://user:password@host:port/database",
    parse: postgresUrl,
    show: (location) => redactUrl(Redacted.value(location.url)),
    durable: true,
    secret: true,
    layer: (location) =>
      loadedLayer(
        () => import("@harness/store-postgres"),
        ({ PostgresStore }) => PostgresStore.layer({ url: location.url })
      )
  },
  memory: {
    syntax: "memory",
    parse: (text) => (text === "memory" ? { _tag: "memory" } : undefined),
    show: () => "memory",
    durable: false,
    secret: false,
    layer: () => loadedLayer(() => import("@harness/session"), ({ SessionStore }) => SessionStore.layerMemory)
  }
}

/** The rows, in table order. */
const rows = Object.values(stores)

/** How `--store` names each store, in table order. */
export const syntaxes: ReadonlyArray<string> = rows.map((kind) => kind.syntax)

/** An example of each store's `--store`, in table order. */
export const examples: ReadonlyArray<string> = rows.map((kind) => kind.example ?? kind.syntax)

/** Words as a list: `a, b, c, or d`. */
export const inWords = (words: ReadonlyArray<string>): string =>
  words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")}, or ${words.at(-1)}`

/** The location `text` names (see {@link StoreKind.parse}), by the first row that recognises it. */
export const parse = (
  text: string,
  resolve: (path: string) => string
): StoreLocation | { readonly invalid: string } | undefined => {
  for (const kind of rows) {
    const parsed = kind.parse(text, resolve)
    if (parsed !== undefined) return parsed
  }
  return undefined
}

/** The row of a location's kind. */
export const kindOf = <K extends Tag>(location: { readonly _tag: K }): StoreKind<LocationOf<K>> => stores[location._tag]
