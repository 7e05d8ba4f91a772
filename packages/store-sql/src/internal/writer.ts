/**
 * One write transaction on a reserved connection (ADR 0029), and how a SQL failure reads: its message, and whether it
 * says the connection is closed for good.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { TransactionConnection } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Effect, Exit } from "effect"
import type { Durability, Run, Writer } from "../SqlStore.js"

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
export const closedConnection = (e: SqlError): boolean =>
  /connection is not open|after calling end on the pool|pool is closed|client was closed and is not queryable/i.test(
    sqlMessage(e)
  )

/** A SQL failure's message with its cause's, which says what the engine refused. */
export const sqlMessage = (e: SqlError): string =>
  e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message
