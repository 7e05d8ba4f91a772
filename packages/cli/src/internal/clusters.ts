/**
 * The storages a cluster's nodes can share, as one table: how `--cluster` names each one, how it is shown, and the SQL
 * client the cluster's tables (its messages, its runners and their shard locks) are kept through. A storage's package
 * is loaded only when its layer is built, so the table loads with the command definitions. Adding a storage is a
 * member of {@link Location} and its row here (the compiler asks for the row).
 */
import { type FileSystem, Path } from "@effect/platform"
import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer, Redacted } from "effect"
import { CommandError, SettingsError } from "../CliError.js"
import { loadedLayer } from "./loadedLayer.js"
import { redactText, redactUrl } from "./redact.js"
import { atPath, parentDirectory, postgresUrl } from "./stores.js"

/** Where a cluster keeps its tables: a PostgreSQL database, or a SQLite file the nodes of one machine share. */
export type Location =
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string> }
  | { readonly _tag: "sqlite"; readonly filename: string }

type Tag = Location["_tag"]
type LocationOf<K extends Tag> = Extract<Location, { readonly _tag: K }>

/** One kind of storage: a row of the table. */
interface ClusterKind<L extends Location> {
  /** How `--cluster` names it, as `--help` shows it. */
  readonly syntax: string
  /** The location `text` names when it names this kind; `undefined` when it does not, `{ invalid }` when it cannot. */
  readonly parse: (text: string, resolve: (path: string) => string) => L | { readonly invalid: string } | undefined
  /** The location as the commands show it: no credential. */
  readonly show: (location: L) => string
  /** The SQL client of the cluster's tables, from its package (loaded now). */
  readonly client: (location: L) => Layer.Layer<SqlClient, unknown, FileSystem.FileSystem | Path.Path>
}

/** Every storage, in the order help and errors list them. */
const kinds: { readonly [K in Tag]: ClusterKind<LocationOf<K>> } = {
  postgres: {
    syntax: "postgres://…",
    parse: postgresUrl,
    show: (location) => redactUrl(Redacted.value(location.url)),
    client: (location) =>
      loadedLayer(() => import("@effect/sql-pg/PgClient"), (PgClient) => PgClient.layer({ url: location.url }))
  },
  sqlite: {
    syntax: "sqlite:<file>",
    parse: atPath("sqlite", "file", (filename) => ({ _tag: "sqlite", filename })),
    show: (location) => `sqlite:${location.filename}`,
    client: (location) =>
      loadedLayer(
        () => import("@effect/sql-sqlite-node/SqliteClient"),
        (SqliteClient) =>
          Layer.unwrapEffect(
            Effect.as(parentDirectory(location.filename), SqliteClient.layer({ filename: location.filename }))
          )
      )
  }
}

const rows = Object.values(kinds)

/** How `--cluster` names each storage, for its help. */
export const syntaxes: ReadonlyArray<string> = rows.map((kind) => kind.syntax)

/** The storage `text` names, paths taken from `cwd`; a text that names none is a `SettingsError` of `setting`. */
export const parse = (text: string, cwd: string, setting: string) =>
  Effect.gen(function*() {
    const path = yield* Path.Path
    const bad = (why: string) =>
      new SettingsError({
        setting,
        message: `${setting} ${JSON.stringify(redactText(text))} ${why}: give ${syntaxes.join(" or ")}`
      })
    for (const kind of rows) {
      const parsed = kind.parse(text, (file) => path.resolve(cwd, file))
      if (parsed === undefined) continue
      return "invalid" in parsed ? yield* bad(parsed.invalid) : parsed
    }
    return yield* bad("is not a cluster's storage")
  })

/** The row of a location's kind. */
const kindOf = <K extends Tag>(location: { readonly _tag: K }): ClusterKind<LocationOf<K>> => kinds[location._tag]

/** The location as the commands show it (no credential). */
export const show = (location: Location): string => kindOf(location).show(location)

/** What a failure says, whatever it is. */
const messageOf = (e: unknown): string =>
  typeof e === "object" && e !== null && "message" in e ? String(e.message) : String(e)

/**
 * The SQL client of the cluster's tables at `location`; one that cannot be opened is a `CommandError` naming the
 * location (without its credential).
 */
export const client = (location: Location): Layer.Layer<SqlClient, CommandError, FileSystem.FileSystem | Path.Path> =>
  kindOf(location).client(location).pipe(
    Layer.mapError((e) =>
      new CommandError({
        reason: "Store",
        message: `cannot open the cluster's storage ${show(location)}: ${redactText(messageOf(e))} (check --cluster)`
      })
    )
  )
