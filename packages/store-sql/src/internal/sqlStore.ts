/**
 * The store over an `@effect/sql` client, shared by the SQLite and PostgreSQL backends: sessions, records and
 * snapshots in three tables (each backend's migration creates them with its own column types), a commit as one
 * transaction whose first statement writes the session's row (taking the lock that orders writers of a session and
 * checking contiguity in one step), and the figures `list` shows kept current in that row.
 *
 * The writer lease (ADR 0044) lives in the session's row too: its fencing token and its holder (pid, host, since,
 * last renewal). `lease` takes it in one write transaction; every write checks the token in the condition of its
 * first statement (no extra statement on the hot path) and, when that statement matches no row, tells `NotFound`,
 * `Busy` and `Conflict` apart.
 */
import * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlClient as SqlClientTag, TransactionConnection } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Ids, Store } from "@harness/domain"
import { SessionStore } from "@harness/session"
import { Chunk, Clock, Duration, Effect, Exit, Fiber, Option, Schema, Stream } from "effect"
import * as os from "node:os"
import type { Dialect, Durability, Options, Run, Writer } from "../SqlStore.js"

type Service = SessionStore.Service

/** Integer columns as drivers return them: PostgreSQL's BIGINT arrives as a string (pg's default for int8). */
type Int = number | string

/** The schema, one migration, with the dialect's column types. */
export const migrations = (dialect: Dialect) => {
  const { bigint, serialKey, smallint } = dialect.columns
  return Migrator.fromRecord({
    "1_sessions": Effect.gen(function*() {
      const sql = yield* SqlClientTag
      yield* sql`CREATE TABLE sessions (
      key ${sql.literal(serialKey)},
      id TEXT NOT NULL UNIQUE,
      header TEXT NOT NULL,
      created_at ${sql.literal(bigint)} NOT NULL,
      records INTEGER NOT NULL,
      events INTEGER NOT NULL,
      turns INTEGER NOT NULL,
      last_activity ${sql.literal(bigint)} NOT NULL,
      bytes ${sql.literal(bigint)} NOT NULL,
      first_prompt TEXT,
      first_prompt_position INTEGER
    )`
      yield* sql`CREATE TABLE records (
      session INTEGER NOT NULL,
      position INTEGER NOT NULL,
      kind ${sql.literal(smallint)} NOT NULL,
      time ${sql.literal(bigint)} NOT NULL,
      message_id TEXT,
      text TEXT NOT NULL,
      PRIMARY KEY (session, position)
    )`
      yield* sql`CREATE INDEX records_message_id ON records (session, message_id) WHERE message_id IS NOT NULL`
      yield* sql`CREATE TABLE snapshots (
      session INTEGER PRIMARY KEY,
      seq INTEGER NOT NULL,
      position INTEGER NOT NULL,
      text TEXT NOT NULL
    )`
    }),
    // ADR 0027: a snapshot's head apart from its body, so `open` reads a few hundred bytes instead of the history
    // (SQLite reads a row's whole value to return any part of it). Snapshots of the first schema are dropped, not
    // converted: the log replays such a session once at its next `open` and saves a new snapshot.
    "2_snapshot_heads": Effect.gen(function*() {
      const sql = yield* SqlClientTag
      yield* sql`DROP TABLE snapshots`
      yield* sql`CREATE TABLE snapshot_heads (
      session INTEGER PRIMARY KEY,
      seq INTEGER NOT NULL,
      position INTEGER NOT NULL,
      head TEXT NOT NULL
    )`
      yield* sql`CREATE TABLE snapshot_bodies (
      session INTEGER PRIMARY KEY,
      seq INTEGER NOT NULL,
      position INTEGER NOT NULL,
      body TEXT NOT NULL
    )`
    }),
    // ADR 0044: the writer lease in the session's row, and the store's last fencing token (tokens grow across the
    // store, so a lease never matches a later session of the same id).
    "3_leases": Effect.gen(function*() {
      const sql = yield* SqlClientTag
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_token ${sql.literal(bigint)}`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_pid INTEGER`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_host TEXT`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_since ${sql.literal(bigint)}`
      yield* sql`ALTER TABLE sessions ADD COLUMN lease_renewed ${sql.literal(bigint)}`
      yield* sql`CREATE TABLE lease_tokens (
      id INTEGER PRIMARY KEY,
      last ${sql.literal(bigint)} NOT NULL
    )`
      yield* sql`INSERT INTO lease_tokens (id, last) VALUES (1, 0)`
    })
  })
}

/** See `SqlStore.writer`. */
export const writer = (sql: SqlClient.SqlClient, durability: Durability): Writer => (use, sync = durability.sync) =>
  Effect.useSpan(
    "SqlStore.write",
    { kind: "client", captureStackTrace: false },
    (span) =>
      Effect.scoped(Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(restore(sql.reserve), (conn) => {
          const execute = (statement: Statement.Statement<unknown>) => {
            const [text, params] = statement.compile()
            return conn.execute(text, params, undefined)
          }
          // A statement transformer the program set (`Statement.withTransformer`) sees every statement, as it would
          // through `@effect/sql`'s own execution.
          const run: Run = <A extends object>(statement: Statement.Statement<A>) =>
            Effect.withFiberRuntime<ReadonlyArray<A>, SqlError>((fiber) => {
              const transform = fiber.getFiberRef(Statement.currentTransformer)
              return (transform._tag === "None"
                ? execute(statement)
                : Effect.flatMap(
                  transform.value(statement, sql, fiber.getFiberRefs(), span),
                  execute
                )) as Effect.Effect<
                  ReadonlyArray<A>,
                  SqlError
                >
            })
          // SQLite rolls a transaction back itself on some failures (SQLITE_FULL among them): its ROLLBACK then
          // finds no transaction, which is what was wanted. Any other failure to roll back fails the write.
          const rollback = Effect.catchAll(
            conn.executeRaw("ROLLBACK", []),
            (e) => noTransaction(e) ? Effect.void : Effect.fail(e)
          )
          return (durability.beforeBegin === undefined ? Effect.void : durability.beforeBegin(run, sync)).pipe(
            Effect.zipRight(conn.executeRaw(durability.begin ?? "BEGIN", [])),
            Effect.zipRight(Effect.exit(
              Effect.zipRight(
                durability.afterBegin === undefined ? Effect.void : durability.afterBegin(run, sync),
                // Statements that do not go through `run` (none should) still use this connection.
                restore(Effect.provideService(use(run), TransactionConnection, [conn, 0]))
              )
            )),
            Effect.flatMap((exit) =>
              Exit.isSuccess(exit)
                ? Effect.as(
                  // A failed COMMIT leaves the transaction open: roll it back, then report the failure.
                  Effect.tapError(conn.executeRaw("COMMIT", []), () => rollback),
                  exit.value
                )
                : Effect.zipRight(rollback, exit)
            )
          )
        })
      ))
  )

/** Whether a failure says there was no transaction to end (SQLite, after it rolled one back itself). */
const noTransaction = (e: SqlError): boolean => /no transaction is active/i.test(sqlMessage(e))

/**
 * Whether a failure says the client's connection is closed for good (the SQLite database was closed, the
 * PostgreSQL pool was ended): nothing can succeed through it again, so retrying is useless (`Closed`).
 */
const closedConnection = (e: SqlError): boolean =>
  /connection is not open|after calling end on the pool|pool is closed|client was closed and is not queryable/i.test(
    sqlMessage(e)
  )

/** Record kinds, as stored: what summaries are recomputed from without parsing a record. */
const kindCode = { inbox: 0, event: 1, turn: 2 } as const

/** Ids are stored as their JSON text: lossless for every JavaScript string. */
const keyText = (id: string): string => JSON.stringify(id)

/** Rows of one multi-row INSERT: 6 parameters each, far below SQLite's (32 766) and PostgreSQL's (65 535) limits. */
const insertBatch = 500

/** Records per page of a streamed load. */
const pageSize = 1_024

/** A SQL failure's message with its cause's, which says what the engine refused. */
export const sqlMessage = (e: SqlError): string =>
  e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message

/** Free text (a prompt preview, a snapshot) is stored as its JSON text, lossless for any JavaScript string. */
const decodeText = (stored: string): string => {
  const parsed: unknown = JSON.parse(stored)
  return typeof parsed === "string" ? parsed : stored
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether a string is well-formed UTF-16 (`String.prototype.isWellFormed` where the runtime has it). */
const isWellFormed = (text: string): boolean => {
  const native = (text as unknown as { readonly isWellFormed?: () => boolean }).isWellFormed
  return native === undefined ? !loneSurrogate.test(text) : native.call(text)
}

/**
 * A snapshot part's stored form (head or body): the text itself when every engine keeps it exactly (well-formed, no NUL — every text
 * `JSON.stringify` makes, so every snapshot the log writes) and it cannot be taken for a JSON string (it does not
 * start with `"`); otherwise its JSON text, as free text is stored. A log's snapshot holds its whole history, so
 * skipping a second encoding (and its decode on every open) matters (ADR 0022). Rows written as JSON text before
 * stay readable: `loadSnapshot` tells the two apart by the first character.
 */
const fromSnapshotColumn = (stored: string): string | undefined => {
  if (!stored.startsWith("\"")) return stored
  try {
    const parsed: unknown = JSON.parse(stored)
    return typeof parsed === "string" ? parsed : undefined
  } catch {
    return undefined
  }
}

const snapshotColumn = (text: string): string =>
  text.length > 0 && !text.startsWith("\"") && !text.includes("\u0000") && isWellFormed(text)
    ? text
    : JSON.stringify(text)

/**
 * A session's id from its stored column (its JSON text; a column that is not is taken as the id itself), unchecked:
 * it names the row as stored, so `remove` finds it whatever it is.
 */
const idOfColumn = (stored: string): Ids.SessionId => {
  try {
    const parsed: unknown = JSON.parse(stored)
    return Ids.SessionId.make(typeof parsed === "string" ? parsed : stored, true)
  } catch {
    return Ids.SessionId.make(stored, true)
  }
}

const decodeHeader = Schema.decodeUnknownEither(Schema.parseJson(Store.SessionHeader))

interface SessionRow {
  readonly key: number
  readonly header: string
  readonly records: number
  readonly events: number
  readonly turns: number
  readonly last_activity: Int
  readonly bytes: Int
  readonly first_prompt: string | null
}

interface LeaseRow {
  readonly lease_token: Int | null
  readonly lease_pid: number | null
  readonly lease_host: string | null
  readonly lease_since: Int | null
  readonly lease_renewed: Int | null
}

/** The lease columns of `sessions`, as every statement that judges a lease selects them. */
const leaseColumns = "lease_token, lease_pid, lease_host, lease_since, lease_renewed"

/** The default lease time: a holder not renewed for this long is gone (ADR 0044). */
const defaultLeaseTime: Duration.DurationInput = "30 seconds"

/** Whether process `pid` runs on this host (`ESRCH`: it does not; `EPERM`: it does, as another user). */
const pidRuns = (pid: number): boolean => {
  if (!Number.isSafeInteger(pid) || pid <= 0) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return !(e instanceof Error && "code" in e && e.code === "ESRCH")
  }
}

/** The store over the `SqlClient` of the context, with `dialect`'s writes and SQL; the schema must be migrated. */
export const make = (dialect: Dialect, options?: Options) =>
  Effect.gen(function*() {
    const sql: SqlClient.SqlClient = yield* SqlClientTag
    const write = yield* dialect.writer(sql)
    const leaseTime = Duration.toMillis(Duration.decode(options?.leaseTime ?? defaultLeaseTime))
    const renewEvery = Duration.millis(Math.max(1, Math.floor(leaseTime / 3)))
    /** This process, as a lease names it. */
    const self = yield* Effect.sync(() => ({ pid: process.pid, host: os.hostname() }))

    const error = (
      id: Ids.SessionId | undefined,
      reason: SessionStore.SessionStoreErrorReason,
      message: string,
      holder?: Store.LeaseHolder
    ) =>
      new SessionStore.SessionStoreError({
        reason,
        message,
        ...(id === undefined ? {} : { id }),
        ...(holder === undefined ? {} : { holder })
      })

    const fail = (id: Ids.SessionId, reason: SessionStore.SessionStoreErrorReason, message: string) =>
      Effect.fail(error(id, reason, message))

    const notFound = (id: Ids.SessionId) => fail(id, "NotFound", `session ${JSON.stringify(id)} is not stored`)

    /** Maps SQL failures to `Io` (or `Closed`, for a connection closed for good), naming the operation and engine. */
    const io = (what: string, id?: Ids.SessionId) =>
    <A, R>(
      effect: Effect.Effect<A, SqlError | SessionStore.SessionStoreError, R>
    ): Effect.Effect<A, SessionStore.SessionStoreError, R> =>
      Effect.catchTag(
        effect,
        "SqlError",
        (e) =>
          Effect.fail(
            error(id, closedConnection(e) ? "Closed" : "Io", `${dialect.name} failed to ${what}: ${sqlMessage(e)}`)
          )
      )

    const lockRow = dialect.lockRow === "" ? sql`` : sql` ${sql.literal(dialect.lockRow)}`

    /** Statements outside a write run as themselves. */
    const direct: Run = (statement) => statement

    /** The token a write carries: its lease's, 0 for none (a session nobody leases stores 0), -1 for another id's. */
    const tokenOf = (id: Ids.SessionId, lease: SessionStore.Lease | undefined): number =>
      lease === undefined ? 0 : lease.id === id ? lease.token : -1

    /** The fence, as a condition on the session's row: the write's token is the row's. */
    const fence = (id: Ids.SessionId, lease: SessionStore.Lease | undefined) =>
      sql` AND COALESCE(lease_token, 0) = ${tokenOf(id, lease)}`

    const holderOf = (row: LeaseRow): Store.LeaseHolder | undefined =>
      row.lease_token === null
        ? undefined
        : { pid: row.lease_pid ?? 0, host: row.lease_host ?? "", since: Number(row.lease_since ?? 0) }

    /** The refusal of a write whose token is not the row's (`undefined` when it is). */
    const fenceRefusal = (id: Ids.SessionId, row: LeaseRow, lease: SessionStore.Lease | undefined) => {
      const stored = row.lease_token === null ? 0 : Number(row.lease_token)
      if (stored === tokenOf(id, lease)) return undefined
      const holder = holderOf(row)
      const name = JSON.stringify(id)
      return error(
        id,
        "Busy",
        holder === undefined
          ? `the writer lease of session ${name} was released`
          : lease === undefined
          ? `session ${name} is leased by a writer (${Store.describeHolder(holder)}): a write must carry its lease`
          : `the writer lease of session ${name} was taken over by ${Store.describeHolder(holder)}`,
        holder
      )
    }

    /** Whether the holder of a leased row is gone: not renewed within the lease time, or dead on this host. */
    const holderGone = (row: LeaseRow, now: number) =>
      Effect.sync(() =>
        now - Number(row.lease_renewed ?? 0) > leaseTime ||
        (row.lease_host === self.host && row.lease_pid !== null && !pidRuns(row.lease_pid))
      )

    /** Whether this process holds the row's lease (through this store or another). */
    const heldHere = (row: LeaseRow) => row.lease_host === self.host && row.lease_pid === self.pid

    /**
     * Why a write's first statement matched no row: `NotFound`, the fence's `Busy`, else `otherwise` (the row exists
     * and the write's token is its own, so the statement's other condition failed).
     */
    const refuse = (
      id: Ids.SessionId,
      run: Run,
      lease: SessionStore.Lease | undefined,
      otherwise: (row: LeaseRow & { readonly events: number }) => SessionStore.SessionStoreError
    ) =>
      Effect.flatMap(
        run(
          sql<LeaseRow & { readonly events: number }>`SELECT events, ${
            sql.literal(leaseColumns)
          } FROM sessions WHERE id = ${keyText(id)}`
        ),
        (rows) => {
          if (rows.length === 0) return notFound(id)
          const refusal = fenceRefusal(id, rows[0]!, lease)
          return Effect.fail(refusal ?? otherwise(rows[0]!))
        }
      )

    /** Refusal of a write whose lease changed while it ran (its first statement saw another). */
    const changedWriter = (id: Ids.SessionId) =>
      error(id, "Busy", `the writer lease of session ${JSON.stringify(id)} changed during the write`)

    const keyOf = (id: Ids.SessionId, run: Run = direct) =>
      Effect.flatMap(
        run(sql<{ readonly key: number }>`SELECT key FROM sessions WHERE id = ${keyText(id)}`),
        (rows) => rows.length === 0 ? notFound(id) : Effect.succeed(rows[0]!.key)
      )

    const insertRecords = (
      run: Run,
      key: number,
      base: number,
      records: ReadonlyArray<SessionStore.EncodedRecord>
    ) =>
      Effect.forEach(
        Array.from(
          { length: Math.ceil(records.length / insertBatch) },
          (_, i) => records.slice(i * insertBatch, (i + 1) * insertBatch)
        ),
        (batch) =>
          run(sql`INSERT INTO records ${
            sql.insert(batch.map((r) => ({
              session: key,
              position: base + r.position,
              kind: kindCode[r.kind],
              time: r.time,
              message_id: r.messageId === undefined ? null : keyText(r.messageId),
              text: r.text
            })))
          }`),
        { discard: true }
      )

    const create: Service["create"] = (header, commit) => {
      const id = header.id
      const empty = { events: [], inbox: [] }
      const issue = SessionStore.contiguityIssue(0, commit ?? empty)
      if (issue !== undefined) return fail(id, "Conflict", issue)
      const headerText = JSON.stringify(header)
      const records = SessionStore.encodeCommit(commit ?? empty, 0)
      const figures = SessionStore.figuresOf(records)
      return write((run) =>
        Effect.gen(function*() {
          const inserted = yield* run(sql<{ readonly key: number }>`INSERT INTO sessions ${
            sql.insert({
              id: keyText(id),
              header: headerText,
              created_at: header.createdAt,
              records: figures.records,
              events: figures.events,
              turns: figures.turns,
              last_activity: figures.lastActivity ?? header.createdAt,
              bytes: SessionStore.utf8Length(headerText) + figures.bytes,
              first_prompt: figures.firstPrompt === undefined ? null : JSON.stringify(figures.firstPrompt.text),
              first_prompt_position: figures.firstPrompt?.position ?? null
            })
          } ON CONFLICT (id) DO NOTHING RETURNING key`)
          if (inserted.length === 0) {
            return yield* fail(id, "AlreadyExists", `session ${JSON.stringify(id)} already exists`)
          }
          yield* insertRecords(run, inserted[0]!.key, 0, records)
        })
      ).pipe(io("create the session", id))
    }

    const append: Service["append"] = (id, commit, options) => {
      const firstSeq = commit.events[0]?.seq
      if (firstSeq !== undefined) {
        const issue = SessionStore.contiguityIssue(firstSeq, commit)
        if (issue !== undefined) return fail(id, "Conflict", issue)
      }
      const lease = options?.lease
      const records = SessionStore.encodeCommit(commit, 0)
      if (records.length === 0) {
        if (options?.sync !== true) {
          return Effect.flatMap(
            sql<LeaseRow>`SELECT ${sql.literal(leaseColumns)} FROM sessions WHERE id = ${keyText(id)}`,
            (rows) => {
              if (rows.length === 0) return notFound(id)
              const refusal = fenceRefusal(id, rows[0]!, lease)
              return refusal === undefined ? Effect.void : Effect.fail(refusal)
            }
          ).pipe(io("read the session", id))
        }
        // A barrier over commits already written unsynced: a synced transaction that rewrites the session's row
        // waits for the engine's log to reach the disk up to its commit, which covers every earlier commit too.
        return write(
          (run) =>
            Effect.gen(function*() {
              const touched = yield* run(
                sql`UPDATE sessions SET records = records WHERE id = ${keyText(id)}${fence(id, lease)} RETURNING key`
              )
              if (touched.length === 0) return yield* refuse(id, run, lease, () => changedWriter(id))
            }),
          true
        ).pipe(io("sync the session", id))
      }
      const figures = SessionStore.figuresOf(records)
      const prompt = figures.firstPrompt
      return write(
        (run) =>
          Effect.gen(function*() {
            // The write comes first: it takes the write lock, updates the figures and checks the fence and
            // contiguity in one step.
            const updated = yield* run(sql<{ readonly key: number; readonly records: number }>`UPDATE sessions SET
            records = records + ${figures.records},
            events = events + ${figures.events},
            turns = turns + ${figures.turns},
            bytes = bytes + ${figures.bytes},
            last_activity = ${figures.lastActivity!},
            first_prompt_position = CASE WHEN first_prompt IS NULL AND ${prompt === undefined ? 0 : 1} = 1
              THEN records + ${prompt?.position ?? 0} ELSE first_prompt_position END,
            first_prompt = CASE WHEN first_prompt IS NULL THEN ${
              prompt === undefined ? null : JSON.stringify(prompt.text)
            } ELSE first_prompt END
          WHERE id = ${keyText(id)}${fence(id, lease)}${firstSeq === undefined ? sql`` : sql` AND events = ${firstSeq}`}
          RETURNING key, records`)
            if (updated.length === 0) {
              return yield* refuse(id, run, lease, (row) =>
                error(
                  id,
                  "Conflict",
                  SessionStore.contiguityIssue(row.events, commit) ?? "the commit does not continue the session"
                ))
            }
            const { key, records: total } = updated[0]!
            yield* insertRecords(run, key, total - figures.records, records)
          }),
        options?.sync === true
      ).pipe(io("append to the session", id))
    }

    const load: Service["load"] = (id, options) =>
      Stream.unwrap(
        keyOf(id).pipe(
          io("read the session", id),
          Effect.map((key) =>
            Stream.paginateChunkEffect(options?.after ?? -1, (after) =>
              sql<SessionStore.StoredRecord>`SELECT position, text FROM records
              WHERE session = ${key} AND position > ${after} ORDER BY position LIMIT ${pageSize}`.pipe(
                io("load the session", id),
                Effect.map((rows) =>
                  [
                    Chunk.unsafeFromArray(rows),
                    rows.length < pageSize ? Option.none() : Option.some(rows[rows.length - 1]!.position)
                  ] as const
                )
              ))
          )
        )
      )

    const header: Service["header"] = (id) =>
      Effect.gen(function*() {
        const rows = yield* sql<{ readonly header: string }>`SELECT header FROM sessions WHERE id = ${keyText(id)}`
        if (rows.length === 0) return yield* notFound(id)
        return yield* decodeStoredHeader(id, rows[0]!.header)
      }).pipe(io("read the session's header", id))

    const decodeStoredHeader = (id: Ids.SessionId | undefined, text: string) => {
      const decoded = decodeHeader(text)
      return decoded._tag === "Right"
        ? Effect.succeed(decoded.right)
        : Effect.fail(
          error(
            id,
            "Corrupt",
            `the stored header ${text.slice(0, 200)} is not a session header: ${decoded.left.message}`
          )
        )
    }

    const truncate: Service["truncate"] = (id, position, options) => {
      const issue = SessionStore.positionIssue(position)
      if (issue !== undefined) return fail(id, "Conflict", issue)
      const lease = options?.lease
      return write((run) =>
        Effect.gen(function*() {
          const rows = yield* run(sql<{ readonly key: number; readonly records: number; readonly created_at: Int }>`
        SELECT key, records, created_at FROM sessions WHERE id = ${keyText(id)}${fence(id, lease)}${lockRow}`)
          if (rows.length === 0) return yield* refuse(id, run, lease, () => changedWriter(id))
          const { created_at, key, records } = rows[0]!
          if (position >= records) return
          const [dropped] = yield* run(sql<{ readonly events: Int; readonly turns: Int; readonly bytes: Int }>`
        SELECT ${sql.literal(dialect.droppedFigures)}
        FROM records WHERE session = ${key} AND position >= ${position}`)
          const last = position === 0
            ? []
            : yield* run(
              sql<{ readonly time: Int }>`SELECT time FROM records WHERE session = ${key} AND position = ${
                position - 1
              }`
            )
          yield* run(sql`DELETE FROM records WHERE session = ${key} AND position >= ${position}`)
          yield* run(sql`DELETE FROM snapshot_heads WHERE session = ${key} AND position >= ${position}`)
          yield* run(sql`DELETE FROM snapshot_bodies WHERE session = ${key} AND position >= ${position}`)
          yield* run(sql`UPDATE sessions SET
          records = ${position},
          events = events - ${Number(dropped!.events)},
          turns = turns - ${Number(dropped!.turns)},
          bytes = bytes - ${Number(dropped!.bytes)},
          last_activity = ${Number(last[0]?.time ?? created_at)},
          first_prompt = CASE WHEN first_prompt_position >= ${position} THEN NULL ELSE first_prompt END,
          first_prompt_position = CASE WHEN first_prompt_position >= ${position} THEN NULL ELSE first_prompt_position END
        WHERE key = ${key}`)
        })
      ).pipe(io("truncate the session", id))
    }

    /** Every session's row, each with its header decoded or what is wrong with it. */
    const rowsOfAll = Effect.flatMap(
      sql<SessionRow & { readonly id: string }>`SELECT key, id, header, records, events, turns, last_activity, bytes,
      first_prompt FROM sessions ORDER BY key`,
      (rows) =>
        Effect.forEach(
          rows,
          (row) => Effect.either(Effect.map(decodeStoredHeader(undefined, row.header), (header) => ({ row, header })))
        ).pipe(
          Effect.map((decoded) => decoded.map((result, i) => ({ row: rows[i]!, result })))
        )
    )

    const list: Service["list"] = Effect.map(rowsOfAll, (rows) =>
      rows.flatMap(({ result }): Array<Store.SessionSummary> => {
        if (result._tag === "Left") return []
        const { header, row } = result.right
        return [{
          header,
          events: row.events,
          turns: row.turns,
          lastActivity: Number(row.last_activity),
          bytes: Number(row.bytes),
          ...(row.first_prompt === null ? {} : { firstPrompt: decodeText(row.first_prompt) })
        }]
      })).pipe(io("list the sessions"))

    const damaged: Service["damaged"] = Effect.map(rowsOfAll, (rows) =>
      rows.flatMap(({ result, row }): Array<Store.DamagedSession> =>
        result._tag === "Right" ? [] : [{ id: idOfColumn(row.id), problem: result.left.message }]
      )).pipe(io("list the damaged sessions"))

    const remove: Service["remove"] = (id, options) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        write((run) =>
          Effect.gen(function*() {
            const rows = yield* run(
              sql<LeaseRow & { readonly key: number }>`SELECT key, ${
                sql.literal(leaseColumns)
              } FROM sessions WHERE id = ${keyText(id)}${lockRow}`
            )
            if (rows.length === 0) {
              return yield* notFound(id)
            }
            const row = rows[0]!
            // Another live process's lease fences the remove; this process's, or a gone holder's, does not.
            const refusal = fenceRefusal(id, row, options?.lease)
            if (refusal !== undefined && row.lease_token !== null && !heldHere(row) && !(yield* holderGone(row, now))) {
              return yield* Effect.fail(refusal)
            }
            const key = row.key
            yield* run(sql`DELETE FROM records WHERE session = ${key}`)
            yield* run(sql`DELETE FROM snapshot_heads WHERE session = ${key}`)
            yield* run(sql`DELETE FROM snapshot_bodies WHERE session = ${key}`)
            yield* run(sql`DELETE FROM sessions WHERE key = ${key}`)
          })
        )).pipe(io("remove the session", id))

    /** Renews a held lease every third of the lease time until it is released or found taken over. */
    const keepAlive = (id: Ids.SessionId, token: number) =>
      Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(renewEvery)
          const now = yield* Clock.currentTimeMillis
          const renewed = yield* Effect.either(
            sql`UPDATE sessions SET lease_renewed = ${now} WHERE id = ${keyText(id)} AND lease_token = ${token}
            RETURNING key`
          )
          // Taken over or removed: nothing left to keep. Closed: nothing can be kept. Other failures: next time.
          if (renewed._tag === "Right" ? renewed.right.length === 0 : closedConnection(renewed.left)) {
            return
          }
        }
      })

    /** `Busy` naming the row's holder when another live process holds its lease. */
    const heldElsewhere = (id: Ids.SessionId, row: LeaseRow, now: number) =>
      Effect.gen(function*() {
        const holder = holderOf(row)
        if (holder === undefined || heldHere(row) || (yield* holderGone(row, now))) {
          return
        }
        return yield* Effect.fail(
          error(id, "Busy", `session ${JSON.stringify(id)} is being written by ${Store.describeHolder(holder)}`, holder)
        )
      })

    const lease: Service["lease"] = (id) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // First a plain read, which never waits for a writer: a session held by a live process is refused at once,
        // even while its holder is inside a write transaction (which would make a write here wait, then fail).
        const seen = yield* sql<LeaseRow>`SELECT ${sql.literal(leaseColumns)} FROM sessions WHERE id = ${keyText(id)}`
          .pipe(io("read the session's lease", id))
        if (seen.length === 0) {
          return yield* notFound(id)
        }
        yield* heldElsewhere(id, seen[0]!, now)
        const token = yield* write((run) =>
          Effect.gen(function*() {
            const rows = yield* run(
              sql<LeaseRow>`SELECT ${sql.literal(leaseColumns)} FROM sessions WHERE id = ${keyText(id)}${lockRow}`
            )
            if (rows.length === 0) {
              return yield* notFound(id)
            }
            yield* heldElsewhere(id, rows[0]!, now)
            const [issued] = yield* run(
              sql<{ readonly last: Int }>`UPDATE lease_tokens SET last = last + 1 WHERE id = 1 RETURNING last`
            )
            const token = Number(issued!.last)
            yield* run(sql`UPDATE sessions SET lease_token = ${token}, lease_pid = ${self.pid},
            lease_host = ${self.host}, lease_since = ${now}, lease_renewed = ${now} WHERE id = ${keyText(id)}`)
            return token
          })
        ).pipe(io("lease the session", id))
        // Interruptible whatever region `lease` runs in (an `acquireRelease` acquire is uninterruptible), so release
        // can stop it.
        const renewal = yield* Effect.forkDaemon(Effect.interruptible(keepAlive(id, token)))
        const release = Effect.zipRight(
          Fiber.interrupt(renewal),
          Effect.ignore(
            sql`UPDATE sessions SET lease_token = NULL, lease_pid = NULL, lease_host = NULL, lease_since = NULL,
            lease_renewed = NULL WHERE id = ${keyText(id)} AND lease_token = ${token}`
          )
        )
        return { id, token, holder: { pid: self.pid, host: self.host, since: now }, release }
      })

    const hasMessage: Service["hasMessage"] = (id, messageId) =>
      Effect.gen(function*() {
        const key = yield* keyOf(id)
        const rows = yield* sql`SELECT 1 AS found FROM records
        WHERE session = ${key} AND message_id = ${keyText(messageId)} LIMIT 1`
        return rows.length > 0
      }).pipe(io("look up a message id", id))

    const saveSnapshot: Service["saveSnapshot"] = (id, snapshot, options) => {
      const issue = SessionStore.snapshotIssue(snapshot)
      if (issue !== undefined) {
        return fail(id, "Conflict", issue)
      }
      const lease = options?.lease
      return write((run) =>
        Effect.gen(function*() {
          const rows = yield* run(sql<{ readonly key: number; readonly records: number }>`
        SELECT key, records FROM sessions WHERE id = ${keyText(id)}${fence(id, lease)}${lockRow}`)
          if (rows.length === 0) {
            return yield* refuse(id, run, lease, () =>
              changedWriter(id))
          }
          const { key, records } = rows[0]!
          if (snapshot.position >= records) {
            return yield* fail(
              id,
              "Conflict",
              `a snapshot at position ${snapshot.position} covers records the session does not store (it stores ${records})`
            )
          }
          // Head and body in one transaction: a crash leaves the previous snapshot or this one.
          yield* run(sql`INSERT INTO snapshot_heads ${
            sql.insert({
              session: key,
              seq: snapshot.seq,
              position: snapshot.position,
              head: snapshotColumn(snapshot.head)
            })
          } ON CONFLICT (session) DO UPDATE SET seq = excluded.seq, position = excluded.position, head = excluded.head`)
          yield* run(sql`INSERT INTO snapshot_bodies ${
            sql.insert({
              session: key,
              seq: snapshot.seq,
              position: snapshot.position,
              body: snapshotColumn(snapshot.body)
            })
          } ON CONFLICT (session) DO UPDATE SET seq = excluded.seq, position = excluded.position, body = excluded.body`)
        })
      ).pipe(io("save the snapshot", id))
    }

    /**
     * The body saved with this head (`stored`: the head's column as loaded): none once the session's snapshot is
     * another one. Head and body are written in one transaction, so the head still being there means its body is.
     */
    const bodyOf = (id: Ids.SessionId, key: number, seq: number, position: number, stored: string) =>
      Effect.gen(function*() {
        const rows = yield* sql<{ readonly body: string }>`
        SELECT b.body AS body FROM snapshot_bodies b JOIN snapshot_heads h ON h.session = b.session
        WHERE b.session = ${key} AND h.seq = ${seq} AND h.position = ${position} AND h.head = ${stored}`
        if (rows.length === 0) {
          return Option.none<string>()
        }
        const body = fromSnapshotColumn(rows[0]!.body)
        if (body === undefined) {
          return yield* fail(id, "Corrupt", "the stored snapshot body is not a JSON string")
        }
        return Option.some(body)
      }).pipe(io("read the snapshot's body", id))

    const loadSnapshot: Service["loadSnapshot"] = (id) =>
      Effect.gen(function*() {
        const key = yield* keyOf(id)
        const rows = yield* sql<{ readonly seq: number; readonly position: number; readonly head: string }>`
        SELECT seq, position, head FROM snapshot_heads WHERE session = ${key}`
        if (rows.length === 0) {
          return Option.none()
        }
        const { position, seq } = rows[0]!
        const head = fromSnapshotColumn(rows[0]!.head)
        if (head === undefined) {
          return yield* fail(id, "Corrupt", "the stored snapshot head is not a JSON string")
        }
        return Option.some<SessionStore.SnapshotHead>({
          seq: Number(seq),
          position: Number(position),
          head,
          body: bodyOf(id, key, Number(seq), Number(position), rows[0]!.head)
        })
      }).pipe(io("load the snapshot", id))

    const service: Service = {
      commitMode: "write-behind",
      create,
      append,
      load,
      header,
      truncate,
      list,
      damaged,
      lease,
      remove,
      hasMessage,
      saveSnapshot,
      loadSnapshot
    }
    return service
  })
