/**
 * The session log: a log assembled from its parts — its state (`Shared`), its append path (`logAppend.ts`), its
 * write-behind writer (`writeBehind.ts`), its snapshot keeper (`snapshotKeeper.ts`) and its reads (`logReads.ts`) —
 * and `make`, which creates a new session (fresh or seeded) and continues it. Opening a stored one, with crash
 * repair, is `openLog.ts`. Everything the append path touches is persistent (`Chunk`, small immutable state
 * objects), so its cost does not grow with the log.
 */
import type { Ids, SessionEvent } from "@harness/domain"
import type { Store as StoreRecords } from "@harness/domain"
import { Chunk, Clock, Context, DefaultServices, Effect, Either, PubSub, Ref, Tracer } from "effect"
import type { MakeOptions, Service } from "../SessionLog.js"
import type { SessionLogError } from "../SessionLogError.js"
import { type Lease, type Service as Store, SessionStore } from "../SessionStore.js"
import type { SessionStoreError } from "../SessionStoreError.js"
import { commitNowOf, leaseOf, writerStore } from "./leasedStore.js"
import { appendParts } from "./logAppend.js"
import { LogService } from "./logReads.js"
import { checkContinuable, encode, invalidSeed, type LogData, randomSessionId, storeError } from "./logRecords.js"
import { Tracker } from "./pendingApprovals.js"
import {
  freshSnapshots,
  noSnapshots,
  snapshotEveryOf,
  snapshotKeeper,
  type SnapshotStart,
  type TurnStarts
} from "./snapshotKeeper.js"
import { type Settings, settingsOf, type Shared, writerOf } from "./writeBehind.js"

/** A log over `reader` from `initial` on: its state, its writer section, its append path and its reads. */
export const makeService: (
  id: Ids.SessionId,
  store: Store,
  lease: Lease | "read-only",
  initial: LogData,
  settings: Settings,
  snapshots: SnapshotStart,
  pendingInbox?: ReadonlyArray<StoreRecords.InboxAccepted>
) => Effect.Effect<Service> = Effect.fnUntraced(function*(
  id: Ids.SessionId,
  reader: Store,
  lease: Lease | "read-only",
  initial: LogData,
  settings: Settings,
  snapshots: SnapshotStart,
  pendingInbox: ReadonlyArray<StoreRecords.InboxAccepted> = []
) {
  // Every write below carries the lease; reads (`LogService`'s) go to the store itself.
  const store = writerStore(reader, lease)
  const writeBehind = settings.mode === "write-behind"
  const stored = initial.state.nextSeq
  const shared = yield* Ref.make<Shared>({
    data: initial,
    writer: {
      durable: stored,
      synced: stored,
      syncTo: stored,
      inbox: Chunk.empty(),
      inboxWritten: 0,
      inboxSynced: 0,
      inboxSyncTo: 0,
      running: false,
      broken: undefined,
      progress: writeBehind ? yield* Effect.makeLatch(false) : undefined
    }
  })
  const lock = yield* Effect.makeSemaphore(1)
  // Only the writer fiber reports faults: a write-through log has no PubSub for them (≈ 1 KB of an idle agent).
  const faults = writeBehind ? yield* PubSub.unbounded<SessionStoreError>() : undefined

  // A memory store's own append as a plain function: commits inside an append's synchronous step (ADR 0037).
  const commitNow = commitNowOf(reader, lease)
  const turnStarts: TurnStarts = { latest: snapshots.turnStart }
  const afterCommit = snapshots.every === 0 ? noSnapshots : snapshotKeeper(id, store, shared, snapshots, turnStarts)
  const prefix = snapshots.prefix

  // The writer exists only on a write-behind log: the one log with a faults PubSub.
  const background = faults === undefined ? undefined : writerOf(id, store, shared, settings, faults, afterCommit)
  const approvals = new Tracker(snapshots.approvals)
  return new LogService({
    parts: appendParts({ id, store, shared, lock, commitNow, afterCommit, background, approvals }),
    approvals,
    store: reader,
    faults,
    prefix: prefix === undefined ? undefined : Effect.map(prefix.load, (body) => body.history),
    turnStarts,
    lease,
    commitMode: settings.mode,
    durable: store.volatile !== true,
    pendingInbox
  })
})

const defaultTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

/**
 * A new log, in the span `SessionLog.make` when the program provided a tracer of its own — as the agent's spans are
 * made only then (ADR 0028). Every agent's creation runs this: with Effect's default tracer nobody reads the span,
 * and making it (and capturing its call site) was ≈ 15 % of the time to create an agent (ADR 0039).
 */
export const make = (options?: MakeOptions): Effect.Effect<Service, SessionLogError, SessionStore> =>
  Effect.tracerWith((tracer) =>
    tracer === defaultTracer
      ? makeLog(options)
      : Effect.withSpan(makeLog(options), "SessionLog.make", { captureStackTrace: false })
  )

const makeLog = Effect.fnUntraced(function*(options?: MakeOptions) {
  const store = yield* SessionStore
  const id = options?.id ?? (yield* randomSessionId)
  const seed = options?.seed ?? []
  const events: Array<SessionEvent.SessionEvent> = []
  for (const [index, candidate] of seed.entries()) {
    const encoded = encode(candidate)
    if (Either.isLeft(encoded)) return yield* invalidSeed(`seed event ${index} is invalid: ${encoded.left}`, index)
    events.push(encoded.right)
  }
  const initial = yield* checkContinuable(events)
  const createdAt = yield* Clock.currentTimeMillis
  const header: StoreRecords.SessionHeader = {
    id,
    version: 1,
    createdAt,
    ...(options?.parent === undefined ? {} : { parent: options.parent }),
    ...(options?.title === undefined ? {} : { title: options.title })
  }
  yield* store.create(header, { events, inbox: [] }).pipe(
    Effect.mapError(storeError(`cannot create session ${JSON.stringify(id)}`))
  )
  const lease = yield* leaseOf(store, id)
  const every = snapshotEveryOf(store, options?.commit)
  return yield* makeService(
    id,
    store,
    lease,
    initial,
    settingsOf(store, options?.commit),
    freshSnapshots(every, events.length, events)
  )
})
