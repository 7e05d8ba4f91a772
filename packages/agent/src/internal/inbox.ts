/**
 * The inbox: every item the agent accepted and has not yet claimed, logged or discarded, in one home (ADR 0009).
 * Queued turns wait in an Effect `Queue` (the FIFO); steering and staged context wait in the one ordered outbox;
 * one immutable {@link Snapshot} in a `Ref` holds the outbox and what the Queue's contents imply (how many items,
 * how many waking). Every change goes through a pure transition here, applied together with the Queue operation it
 * describes, holding the agent's lock — so the Queue and the snapshot never disagree, and nobody else keeps a
 * counter in sync by hand.
 */
import type { Ids, Inbox as InboxT, Message } from "@harness/domain"
import { Chunk, Effect, HashSet, Option, Queue, Ref } from "effect"

/**
 * What a send said about staleness (ADR 0059): when the item expires (epoch milliseconds on the `Clock`) and the key
 * a later send supersedes it by. Absent on every item whose send said neither, so a plain item carries nothing.
 */
export interface Stale {
  readonly expiresAt?: number
  readonly supersedes?: string
}

/** An item of the queued FIFO: a whole turn, waking or parked. `order` is its acceptance order. */
export interface QueuedItem extends Stale {
  readonly message: Message.AgentMessage
  readonly wakeup: boolean
  readonly order: number
}

/** A steering item of the outbox (with its inbox id and acceptance order). */
interface SteeringItem extends Stale {
  readonly _tag: "steering"
  readonly message: Message.AgentMessage
  readonly order: number
}

/**
 * Input that reaches the log as a `user/message`: an accepted message (with its id), or context derived from one —
 * a tool result's or a hook's additional context — which has none. An `AgentMessage` is one as it is.
 */
export type UserInput = Message.UserMessageData & { readonly id?: Ids.AgentMessageId }

/** An item of the one ordered outbox: steering or staged context. */
export type OutboxItem =
  | SteeringItem
  | { readonly _tag: "context"; readonly message: UserInput }

/**
 * What names an outbox item across the inbox's operations: its message's id, or the item itself for context that has
 * none. An edit or a move replaces the item's object but keeps its id, so the item stays the one staged before a
 * claim (R45).
 */
export type OutboxKey = Ids.AgentMessageId | OutboxItem

/** The key of an outbox item ({@link OutboxKey}). */
export const outboxKey = (item: OutboxItem): OutboxKey => item.message.id ?? item

/** The keys of the items staged now: the input a claim retains, logged before its prompt (R45). */
export const stagedKeys = (snapshot: Snapshot): ReadonlySet<OutboxKey> => {
  const keys = new Set<OutboxKey>()
  for (const item of snapshot.outbox) keys.add(outboxKey(item))
  return keys
}

/**
 * The accepted message of `data` under `id`: the one shape an accepted message has from acceptance to the log, and
 * its one freeze (`data` is decoded, so already a frozen copy; only the new record is frozen here, R21).
 */
export const accepted = (data: Message.UserMessageData, id: Ids.AgentMessageId): Message.AgentMessage =>
  Object.freeze({ content: data.content, id, source: data.source })

/**
 * Accepted ids this agent remembers, in two generations of at most {@link GENERATION} ids each: when the current
 * one is full it becomes the previous one and the oldest generation is forgotten. Older ids are recovered from the
 * pending items and then from the session log, which answers from its store's index (see {@link isKnown}).
 */
interface Recent {
  readonly current: HashSet.HashSet<string>
  readonly previous: HashSet.HashSet<string>
}

/** How many ids one generation of {@link Recent} holds. */
export const GENERATION = 1024

/** The inbox's one value. Contract: changed only by the transitions of this module, holding the agent's lock. */
export interface Snapshot {
  /** Items in the Queue, and how many of them are waking: what the Queue's contents imply, never set by hand. */
  readonly queued: number
  readonly waking: number
  /** Steering and staged context, in acceptance order. */
  readonly outbox: Chunk.Chunk<OutboxItem>
  /**
   * Steering in the outbox was stranded by a cancelled or failed activity: it is waking work, and the driver starts
   * a turn for it when no waking queued item comes first. Cleared when an activity starts (its opening drains it).
   */
  readonly stranded: boolean
  /** The acceptance order the next item gets. */
  readonly next: number
  readonly recent: Recent
}

/** An empty inbox. */
export const empty: Snapshot = {
  queued: 0,
  waking: 0,
  outbox: Chunk.empty(),
  stranded: false,
  next: 0,
  recent: { current: HashSet.empty(), previous: HashSet.empty() }
}

// -------------------------------------------------------------------------------------------------------------
// Pure transitions

/** Remembers an accepted id (bounded: see {@link Recent}). */
export const remember = (snapshot: Snapshot, id: string): Snapshot => {
  const { current, previous } = snapshot.recent
  return HashSet.size(current) >= GENERATION
    ? { ...snapshot, recent: { current: HashSet.make(id), previous: current } }
    : { ...snapshot, recent: { current: HashSet.add(current, id), previous } }
}

/** Whether the id is among the recently accepted ones. */
export const isRecent = (snapshot: Snapshot, id: string): boolean =>
  HashSet.has(snapshot.recent.current, id) || HashSet.has(snapshot.recent.previous, id)

/** A queued item was offered to the Queue. */
const enqueued = (snapshot: Snapshot, item: QueuedItem): Snapshot =>
  remember({
    ...snapshot,
    queued: snapshot.queued + 1,
    waking: snapshot.waking + (item.wakeup ? 1 : 0),
    next: Math.max(snapshot.next, item.order + 1)
  }, item.message.id)

/** An item was staged on the outbox (steering, or context that joins the open turn). */
export const staged = (snapshot: Snapshot, item: OutboxItem): Snapshot => {
  const next = { ...snapshot, outbox: Chunk.append(snapshot.outbox, item) }
  if (item._tag === "steering") {
    return remember({ ...next, next: Math.max(snapshot.next, item.order + 1) }, item.message.id)
  }
  return item.message.id === undefined ? next : remember(next, item.message.id)
}

/** Items left the Queue (claimed, discarded or withdrawn). */
const dequeued = (snapshot: Snapshot, items: Iterable<QueuedItem>): Snapshot => {
  let queued = snapshot.queued
  let waking = snapshot.waking
  for (const item of items) {
    queued -= 1
    if (item.wakeup) waking -= 1
  }
  return { ...snapshot, queued, waking }
}

/** Whether the outbox holds steering. */
export const hasSteering = (snapshot: Snapshot): boolean =>
  Chunk.some(snapshot.outbox, (item) => item._tag === "steering")

/** The first steering item of the outbox. */
export const firstSteering = (snapshot: Snapshot): Option.Option<Message.AgentMessage> =>
  Chunk.findFirst(snapshot.outbox, (item) => item._tag === "steering").pipe(
    Option.flatMap((item) => item._tag === "steering" ? Option.some(item.message) : Option.none())
  )

/** A queued item as a caller sees it. */
const queuedView = (item: QueuedItem): InboxT.InboxItem => ({
  ...item.message,
  placement: "queued",
  order: item.order,
  waking: item.wakeup
})

/** A steering item as a caller sees it. */
const steeringView = (message: Message.AgentMessage, order: number, waking: boolean): InboxT.InboxItem => ({
  ...message,
  placement: "steering",
  order,
  waking
})

/** The pending items a caller sees, in acceptance order. `steeringWakes`: whether staged steering is waking now. */
const view = (
  queued: Iterable<QueuedItem>,
  snapshot: Snapshot,
  steeringWakes: boolean
): ReadonlyArray<InboxT.InboxItem> => {
  const items: Array<InboxT.InboxItem> = []
  for (const item of queued) items.push(queuedView(item))
  for (const item of snapshot.outbox) {
    if (item._tag === "steering") items.push(steeringView(item.message, item.order, steeringWakes))
  }
  return items.sort((a, b) => a.order - b.order)
}

// -------------------------------------------------------------------------------------------------------------
// The Queue and the snapshot together. Every function below must run holding the agent's lock.

/** The inbox's two parts: the FIFO of queued turns and the snapshot. */
export interface Inbox {
  /**
   * The FIFO of queued turns, made by the first offer and kept for the agent's life (ADR 0079): an agent that was never
   * sent a turn holds no `Queue`, and a turn makes none. Reached only through {@link takeAll}, {@link offerAll} and the
   * functions below, holding the agent's lock; set once, in a synchronous step.
   */
  queue: Queue.Queue<QueuedItem> | undefined
  readonly snapshot: Ref.Ref<Snapshot>
}

/** A new, empty inbox: no `Queue` until the first offer. */
export const make: Effect.Effect<Inbox> = Effect.map(
  Ref.make(empty),
  (snapshot): Inbox => ({ queue: undefined, snapshot })
)

/** The first offer's `Queue`, made and kept (ADR 0079). */
const made = (inbox: Inbox): Effect.Effect<Queue.Queue<QueuedItem>> =>
  Effect.map(Queue.unbounded<QueuedItem>(), (queue) => (inbox.queue = queue))

/** Runs `f` on the FIFO, made now if this is the first offer. */
const withQueue = <A>(inbox: Inbox, f: (queue: Queue.Queue<QueuedItem>) => Effect.Effect<A>): Effect.Effect<A> =>
  Effect.suspend(() => inbox.queue !== undefined ? f(inbox.queue) : Effect.flatMap(made(inbox), f))

/** Takes every queued item, in FIFO order. */
const takeAll = (inbox: Inbox): Effect.Effect<Chunk.Chunk<QueuedItem>> =>
  Effect.suspend(() => inbox.queue === undefined ? Effect.succeed(Chunk.empty()) : Queue.takeAll(inbox.queue))

/** Offers items back in this order (a `Queue` is made only for some). */
const offerAll = (inbox: Inbox, items: ReadonlyArray<QueuedItem>): Effect.Effect<unknown> =>
  items.length === 0 ? Effect.void : withQueue(inbox, (queue) => Queue.offerAll(queue, items))

/** Reads the snapshot. */
export const get = (inbox: Inbox): Effect.Effect<Snapshot> => Ref.get(inbox.snapshot)

/** Applies a transition that does not touch the Queue (the outbox, `stranded`, remembered ids). */
export const modify = (inbox: Inbox, f: (snapshot: Snapshot) => Snapshot): Effect.Effect<void> =>
  Ref.update(inbox.snapshot, f)

/** Offers a queued turn. */
export const offer = (inbox: Inbox, item: QueuedItem): Effect.Effect<void> =>
  Effect.zipRight(
    withQueue(inbox, (queue) => Queue.offer(queue, item)),
    Ref.update(inbox.snapshot, (s) => enqueued(s, item))
  )

/** Claims the head of the FIFO when a waking item is queued (R31: parked items ahead of it run first). */
export const claim = Effect.fnUntraced(function*(inbox: Inbox) {
  const queue = inbox.queue
  if ((yield* Ref.get(inbox.snapshot)).waking === 0 || queue === undefined) return Option.none()
  const item = yield* Queue.poll(queue)
  if (Option.isSome(item)) yield* Ref.update(inbox.snapshot, (s) => dequeued(s, [item.value]))
  return item
})

/**
 * Discards everything pending but staged context (a cancel without `keepInbox`, disposal): the queued items, then
 * the steering, in that order (R84).
 */
export const discardAll = Effect.fnUntraced(function*(inbox: Inbox) {
  const queued = Chunk.toReadonlyArray(yield* takeAll(inbox))
  const snapshot = yield* Ref.get(inbox.snapshot)
  const steering: Array<Message.AgentMessage> = []
  for (const item of snapshot.outbox) if (item._tag === "steering") steering.push(item.message)
  yield* Ref.set(inbox.snapshot, {
    ...dequeued(snapshot, queued),
    outbox: Chunk.filter(snapshot.outbox, (item) => item._tag === "context")
  })
  return [...queued.map((item) => item.message), ...steering]
})

/** The queued items, in FIFO order, leaving the Queue as it was. */
const peekQueued = Effect.fnUntraced(function*(inbox: Inbox) {
  const items = Chunk.toReadonlyArray(yield* takeAll(inbox))
  yield* offerAll(inbox, items)
  return items
})

/** The pending items, in acceptance order. */
export const list: (inbox: Inbox, steeringWakes: boolean) => Effect.Effect<ReadonlyArray<InboxT.InboxItem>> = Effect
  .fnUntraced(function*(inbox: Inbox, steeringWakes: boolean) {
    const queued = yield* peekQueued(inbox)
    return view(queued, yield* Ref.get(inbox.snapshot), steeringWakes)
  })

/**
 * A pending item an operation took or changed: the accepted message it holds (the inbox's own object, which live
 * events carry as it is, R92) and the item as a caller sees it.
 */
export interface Pending {
  readonly message: Message.AgentMessage
  readonly item: InboxT.InboxItem
}

/**
 * Removes one pending item — queued, parked or steering — by id; `None` when no pending item has that id.
 */
export const withdraw = Effect.fnUntraced(function*(inbox: Inbox, id: Ids.AgentMessageId, steeringWakes: boolean) {
  const snapshot = yield* Ref.get(inbox.snapshot)
  const staged = Chunk.findFirst(
    snapshot.outbox,
    (item) => item._tag === "steering" && item.message.id === id
  )
  if (Option.isSome(staged) && staged.value._tag === "steering") {
    const item = staged.value
    yield* Ref.set(inbox.snapshot, { ...snapshot, outbox: Chunk.filter(snapshot.outbox, (o) => o !== item) })
    return Option.some<Pending>({
      message: item.message,
      item: steeringView(item.message, item.order, steeringWakes)
    })
  }
  if (snapshot.queued === 0) return Option.none<Pending>()
  const queued = Chunk.toReadonlyArray(yield* takeAll(inbox))
  const found = queued.find((item) => item.message.id === id)
  yield* offerAll(inbox, found === undefined ? queued : queued.filter((item) => item !== found))
  if (found === undefined) return Option.none<Pending>()
  yield* Ref.set(inbox.snapshot, dequeued(snapshot, [found]))
  return Option.some<Pending>({ message: found.message, item: queuedView(found) })
})

/**
 * Whether an id was accepted by this agent or, before it, in this session: remembered, pending, or (through
 * `logged`: the session log and its store's index) recorded. The remembered
 * ids answer almost every resend; the slower checks run only for ids older than the memory.
 */
export const isKnown = Effect.fnUntraced(function*<E>(
  inbox: Inbox,
  id: Ids.AgentMessageId,
  logged: (id: Ids.AgentMessageId) => Effect.Effect<boolean, E>
) {
  const snapshot = yield* Ref.get(inbox.snapshot)
  if (isRecent(snapshot, id)) return true
  const stagedHere = Chunk.some(
    snapshot.outbox,
    (item) => item.message.id === id
  )
  if (stagedHere) return true
  if (snapshot.queued > 0 && (yield* peekQueued(inbox)).some((item) => item.message.id === id)) return true
  return yield* logged(id)
})

// -------------------------------------------------------------------------------------------------------------
// Changing a pending item in place (`edit`, `move`, `promote`, `demote`, ADR 0050). Each runs holding the lock,
// finds the item by id and answers `None` when no pending item has it. The Queue is rebuilt by `takeAll` and
// `offerAll` (as `withdraw` does): these are rare operations, never on a send's path.

type Steering = SteeringItem

/** What `promote` or `demote` did: moved the item, or found it in the other FIFO (`where`). */
export type Placed =
  | { readonly moved: true; readonly pending: Pending }
  | { readonly moved: false; readonly where: "queued" | "steering" }

/** Where a pending item is. */
type Found =
  | { readonly _tag: "queued"; readonly items: ReadonlyArray<QueuedItem>; readonly index: number }
  | { readonly _tag: "steering"; readonly index: number }

/** Finds a pending item; a queued lookup leaves the Queue's items out (the caller offers them back). */
const find = Effect.fnUntraced(function*(inbox: Inbox, id: Ids.AgentMessageId) {
  const snapshot = yield* Ref.get(inbox.snapshot)
  const index = Chunk.findFirstIndex(
    snapshot.outbox,
    (item) => item._tag === "steering" && item.message.id === id
  )
  if (Option.isSome(index)) return Option.some<Found>({ _tag: "steering", index: index.value })
  if (snapshot.queued === 0) return Option.none<Found>()
  const items = Chunk.toReadonlyArray(yield* takeAll(inbox))
  const at = items.findIndex((item) => item.message.id === id)
  if (at < 0) {
    yield* offerAll(inbox, items)
    return Option.none<Found>()
  }
  return Option.some<Found>({ _tag: "queued", items, index: at })
})

/** `item` with the staleness of `from`, if it has any (a plain item stays plain). */
const staleOf = <A extends object>(item: A, from: Stale): A & Stale =>
  from.expiresAt === undefined && from.supersedes === undefined
    ? item
    : {
      ...item,
      ...(from.expiresAt === undefined ? {} : { expiresAt: from.expiresAt }),
      ...(from.supersedes === undefined ? {} : { supersedes: from.supersedes })
    }

/** `items` in their new sequence, each given the acceptance orders of the old one, smallest first. */
const renumber = <A extends { readonly order: number }>(items: ReadonlyArray<A>): Array<A> => {
  const orders = items.map((item) => item.order).sort((a, b) => a - b)
  return items.map((item, index) => ({ ...item, order: orders[index]! }))
}

/**
 * Replaces a pending item's content and source (a new accepted message); its id, placement, waking and position stay.
 */
export const edit = Effect.fnUntraced(
  function*(inbox: Inbox, id: Ids.AgentMessageId, data: Message.UserMessageData, steeringWakes: boolean) {
    const found = yield* find(inbox, id)
    if (Option.isNone(found)) return Option.none<Pending>()
    // An edit accepts new content under the item's id.
    const message = accepted(data, id)
    if (found.value._tag === "queued") {
      const { index, items } = found.value
      const item: QueuedItem = { ...items[index]!, message }
      yield* offerAll(inbox, items.map((old, at) => at === index ? item : old))
      return Option.some<Pending>({ message, item: queuedView(item) })
    }
    const { index } = found.value
    const snapshot = yield* Ref.get(inbox.snapshot)
    const old = Chunk.unsafeGet(snapshot.outbox, index)
    if (old._tag !== "steering") return Option.none<Pending>()
    const order = old.order
    yield* Ref.set(inbox.snapshot, {
      ...snapshot,
      outbox: Chunk.replace(snapshot.outbox, index, { ...old, message })
    })
    return Option.some<Pending>({ message, item: steeringView(message, order, steeringWakes) })
  }
)

/**
 * Moves a pending item to `position` within its FIFO (clamped to the last place). Answers the item (`Pending`), its
 * index afterwards, and the id of the item of its FIFO now right after it (none when it is last): the durable record.
 */
export const move = Effect.fnUntraced(
  function*(inbox: Inbox, id: Ids.AgentMessageId, position: number, steeringWakes: boolean) {
    const found = yield* find(inbox, id)
    if (Option.isNone(found)) return Option.none()
    if (found.value._tag === "queued") {
      const { index, items } = found.value
      const rest = items.filter((_, at) => at !== index)
      const to = Math.min(position, rest.length)
      const sequence = renumber([...rest.slice(0, to), items[index]!, ...rest.slice(to)])
      yield* offerAll(inbox, sequence)
      const moved = sequence[to]!
      return Option.some({
        pending: { message: moved.message, item: queuedView(moved) },
        position: to,
        before: sequence[to + 1]?.message.id
      })
    }
    const snapshot = yield* Ref.get(inbox.snapshot)
    const outbox = Chunk.toReadonlyArray(snapshot.outbox)
    const steering = outbox.filter((item): item is Steering => item._tag === "steering")
    const self = outbox[found.value.index] as Steering // `find` found steering at this index
    const others = steering.filter((item) => item !== self)
    const to = Math.min(position, others.length)
    const sequence = renumber([...others.slice(0, to), self, ...others.slice(to)])
    // The steering items take their new sequence in the slots steering held; staged context keeps its places, except
    // that a steering item moved last follows everything staged.
    const withoutSelf = outbox.filter((item) => item !== self)
    const rebuilt: Array<OutboxItem> = []
    let next = 0
    for (const item of withoutSelf) {
      if (item._tag === "steering") {
        if (next === to) rebuilt.push(sequence[next++]!)
        rebuilt.push(sequence[next++]!)
      } else rebuilt.push(item)
    }
    if (next < sequence.length) rebuilt.push(sequence[next]!)
    yield* Ref.set(inbox.snapshot, { ...snapshot, outbox: Chunk.unsafeFromArray(rebuilt) })
    const moved = sequence[to]!
    const after = sequence[to + 1]
    return Option.some({
      pending: { message: moved.message, item: steeringView(moved.message, moved.order, steeringWakes) },
      position: to,
      before: after === undefined ? undefined : after.message.id
    })
  }
)

/** A queued turn becomes steering, last in the outbox (its acceptance order stays). */
export const promote = Effect.fnUntraced(function*(inbox: Inbox, id: Ids.AgentMessageId) {
  const found = yield* find(inbox, id)
  if (Option.isNone(found)) return Option.none<Placed>()
  if (found.value._tag !== "queued") return Option.some<Placed>({ moved: false, where: found.value._tag })
  const { index, items } = found.value
  const item = items[index]!
  yield* offerAll(inbox, items.filter((_, at) => at !== index))
  yield* Ref.update(inbox.snapshot, (s) => ({
    ...dequeued(s, [item]),
    outbox: Chunk.append(
      s.outbox,
      staleOf({ _tag: "steering" as const, message: item.message, order: item.order }, item)
    )
  }))
  return Option.some<Placed>({
    moved: true,
    pending: { message: item.message, item: steeringView(item.message, item.order, true) }
  })
})

/** Steering not yet drained becomes a waking queued turn, last in the FIFO. */
export const demote = Effect.fnUntraced(function*(inbox: Inbox, id: Ids.AgentMessageId) {
  const found = yield* find(inbox, id)
  if (Option.isNone(found)) return Option.none<Placed>()
  if (found.value._tag === "queued") {
    yield* offerAll(inbox, found.value.items)
    return Option.some<Placed>({ moved: false, where: "queued" })
  }
  const snapshot = yield* Ref.get(inbox.snapshot)
  const old = Chunk.unsafeGet(snapshot.outbox, found.value.index)
  if (old._tag !== "steering") return Option.none<Placed>()
  const item: QueuedItem = staleOf({ message: old.message, wakeup: true, order: snapshot.next }, old)
  yield* Ref.set(inbox.snapshot, { ...snapshot, outbox: Chunk.remove(snapshot.outbox, found.value.index) })
  yield* offer(inbox, item)
  return Option.some<Placed>({ moved: true, pending: { message: item.message, item: queuedView(item) } })
})

/**
 * Offers a queued turn at the head of the FIFO (a send with `whenBusy: "interrupt"`): it runs next. The queued items
 * exchange their `order` ranks so that `inbox` lists it first. Answers the id of the item that was at the head.
 */
export const offerFirst = Effect.fnUntraced(function*(inbox: Inbox, item: QueuedItem) {
  const rest = Chunk.toReadonlyArray(yield* takeAll(inbox))
  const sequence = renumber([item, ...rest])
  yield* offerAll(inbox, sequence)
  yield* Ref.update(inbox.snapshot, (s) => enqueued(s, item))
  return rest[0]?.message.id
})

// -------------------------------------------------------------------------------------------------------------
// Stale input (ADR 0059): only a send that said `ttl`, `expiresAt` or `supersedes` reaches these.

/** The pending items (queued turns, then steering) a send with key `key` supersedes. */
export const withKey = Effect.fnUntraced(function*(inbox: Inbox, key: string) {
  const ids: Array<Ids.AgentMessageId> = []
  const snapshot = yield* Ref.get(inbox.snapshot)
  if (snapshot.queued > 0) {
    for (const item of yield* peekQueued(inbox)) if (item.supersedes === key) ids.push(item.message.id)
  }
  for (const item of snapshot.outbox) {
    if (item._tag === "steering" && item.supersedes === key) ids.push(item.message.id)
  }
  return ids
})

/** The pending items whose `expiresAt` is at or before `now`, in acceptance order. */
export const expiredAt = Effect.fnUntraced(function*(inbox: Inbox, now: number) {
  const ids: Array<{ readonly id: Ids.AgentMessageId; readonly order: number }> = []
  const snapshot = yield* Ref.get(inbox.snapshot)
  if (snapshot.queued > 0) {
    for (const item of yield* peekQueued(inbox)) {
      if (item.expiresAt !== undefined && item.expiresAt <= now) ids.push({ id: item.message.id, order: item.order })
    }
  }
  for (const item of snapshot.outbox) {
    if (item._tag === "steering" && item.expiresAt !== undefined && item.expiresAt <= now) {
      ids.push({ id: item.message.id, order: item.order })
    }
  }
  return ids.sort((a, b) => a.order - b.order).map((entry) => entry.id)
})

/** The ids of every pending item (queued turns and steering), in acceptance order: what a `keepInbox` cancel kept. */
export const pendingIds = Effect.fnUntraced(function*(inbox: Inbox) {
  return (yield* list(inbox, false)).map((item) => item.id)
})
