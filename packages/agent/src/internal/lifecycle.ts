/**
 * The agent's lifecycle as one value (ADR 0021): `Idle` (no driver), `Running` (a driver works through the inbox,
 * perhaps with an activity), `Disposing` (the scope closed while a driver still runs: it finishes its activity and
 * claims nothing — cut short by disposal's cancel, or left to end on its own in a graceful stop, R224) and `Disposed`. What exists only while a driver runs — the driver, the deferred `whenIdle` waits
 * on, the reported status, the activity with its window, cancel cause and close policy — lives inside the states
 * that have it, so a combination such as "an activity without a driver" or "a cancel cause with no activity"
 * cannot be written down. Every change is a pure transition below; the agent swaps the result into its one `Ref`
 * holding the window's lock.
 */
import type { AgentEvent } from "@harness/domain"
import type { Effect, Fiber } from "effect"
import { Data, Option } from "effect"
import type { Activity } from "./activity.js"

/** What a driver carries while it runs (in `Running` and `Disposing`). */
interface Driving {
  /** The driver fiber: it claims work and awaits each activity. */
  readonly driver: Fiber.RuntimeFiber<void>
  /** Opened when the driver exits; `whenIdle` waits on it. */
  readonly idle: Effect.Latch
  /** The status last published: `idle` until the driver's first activity starts, then `running` until it exits. */
  readonly status: AgentEvent.AgentStatus
  /** The current activity (an admission and its turn, or a retry turn), from its start until it is settled. */
  readonly activity: Activity | undefined
}

/** The lifecycle. */
export type Lifecycle = Data.TaggedEnum<{
  Idle: {}
  Running: Driving
  Disposing: Driving
  Disposed: {}
}>

/** Constructors and guards of {@link Lifecycle}. */
export const Lifecycle = Data.taggedEnum<Lifecycle>()

// `Data.taggedEnum` is a Proxy that makes a new constructor on every property read: each transition would pay a
// Proxy trap and a closure. The constructors are read once; the states without fields are values (ADR 0043).
const { Disposing, Running } = Lifecycle
const disposedState: Lifecycle = Lifecycle.Disposed()

/** A fresh agent's lifecycle, and the one a driver leaves when it stops: `Idle`. */
export const initial: Lifecycle = Lifecycle.Idle()

// -------------------------------------------------------------------------------------------------------------
// Reading

/** Whether the agent was disposed (its scope closed): it accepts nothing and starts nothing. */
export const isDisposed = (lifecycle: Lifecycle): boolean =>
  lifecycle._tag === "Disposing" || lifecycle._tag === "Disposed"

/** The driver's part of the lifecycle, if a driver runs. */
export const driving = (
  lifecycle: Lifecycle
): Data.TaggedEnum.Value<Lifecycle, "Running" | "Disposing"> | undefined =>
  lifecycle._tag === "Running" || lifecycle._tag === "Disposing" ? lifecycle : undefined

/** The current activity, if any. */
export const activity = (lifecycle: Lifecycle): Activity | undefined => driving(lifecycle)?.activity

/** The status to report (`status`): `running` from the driver's first activity until the driver exits. */
export const status = (lifecycle: Lifecycle): AgentEvent.AgentStatus => driving(lifecycle)?.status ?? "idle"

/** `acceptsNextStep`: the current activity's window is open. */
export const windowOpen = (lifecycle: Lifecycle): boolean => activity(lifecycle)?.window === true

/** The cancel cause recorded for the current activity, if any. */
export const cause = (lifecycle: Lifecycle): AgentEvent.InterruptReason | undefined => activity(lifecycle)?.cause

// -------------------------------------------------------------------------------------------------------------
// Transitions: each returns the next lifecycle, or `None` when the current state forbids it.

/** A driving state with the given tag (the fields are copied: the values are Data classes, compared by value). */
const drivingAs = (tag: "Running" | "Disposing", { activity, driver, idle, status }: Driving): Lifecycle =>
  tag === "Disposing"
    ? Disposing({ driver, idle, status, activity })
    : Running({ driver, idle, status, activity })

const withActivity = (lifecycle: Lifecycle, f: (activity: Activity) => Activity): Option.Option<Lifecycle> => {
  const current = driving(lifecycle)
  return current?.activity === undefined
    ? Option.none()
    : Option.some(drivingAs(current._tag, { ...current, activity: f(current.activity) }))
}

/** A driver was forked: `Idle` → `Running` (status still `idle`: nothing was claimed yet). */
export const driverStarted = (
  lifecycle: Lifecycle,
  driver: Fiber.RuntimeFiber<void>,
  idle: Effect.Latch
): Option.Option<Lifecycle> =>
  lifecycle._tag === "Idle"
    ? Option.some(Running({ driver, idle, status: "idle", activity: undefined }))
    : Option.none()

/**
 * An activity started: `Running` without an activity → `Running` with it, status `running`. Refused while another
 * activity runs, without a driver, and once disposal began (a disposing driver only finishes what it has).
 */
export const activityStarted = (lifecycle: Lifecycle, started: Activity): Option.Option<Lifecycle> =>
  lifecycle._tag === "Running" && lifecycle.activity === undefined
    ? Option.some(
      Running({ driver: lifecycle.driver, idle: lifecycle.idle, status: "running", activity: started })
    )
    : Option.none()

/**
 * A cancel hit the current activity: the first cause wins; a default cancel (without `keepInbox`) makes its close
 * log the staged context. Refused without an activity.
 */
export const cancelled = (
  lifecycle: Lifecycle,
  reason: AgentEvent.InterruptReason,
  keepInbox: boolean
): Option.Option<Lifecycle> =>
  withActivity(lifecycle, (current) => ({
    ...current,
    cause: current.cause ?? reason,
    logContextOnClose: current.logContextOnClose || !keepInbox
  }))

/** The current activity's turn is ending: its window closes (before `turn/end`, R57). Refused without an activity. */
export const windowClosed = (lifecycle: Lifecycle): Option.Option<Lifecycle> =>
  withActivity(lifecycle, (current) => (current.window ? { ...current, window: false } : current))

/** The current activity was settled: the driver goes on without it. Refused without an activity. */
export const activitySettled = (lifecycle: Lifecycle): Option.Option<Lifecycle> => {
  const current = driving(lifecycle)
  return current?.activity === undefined
    ? Option.none()
    : Option.some(drivingAs(current._tag, { ...current, activity: undefined }))
}

/**
 * The driver found nothing more to do and exits: `Running` → `Idle`, `Disposing` → `Disposed`. Refused while an
 * activity runs and without a driver.
 */
export const driverStopped = (lifecycle: Lifecycle): Option.Option<Lifecycle> =>
  lifecycle._tag === "Running" && lifecycle.activity === undefined
    ? Option.some(initial)
    : lifecycle._tag === "Disposing" && lifecycle.activity === undefined
    ? Option.some(disposedState)
    : Option.none()

/**
 * The agent's scope closed (or a graceful stop began, R224): `Idle` → `Disposed`; `Running` → `Disposing` (its driver
 * finishes the current activity and stops). Refused once disposal began.
 */
export const disposed = (lifecycle: Lifecycle): Option.Option<Lifecycle> =>
  lifecycle._tag === "Idle"
    ? Option.some(disposedState)
    : lifecycle._tag === "Running"
    ? Option.some(drivingAs("Disposing", lifecycle))
    : Option.none()
