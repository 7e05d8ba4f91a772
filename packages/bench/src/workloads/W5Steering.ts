/**
 * W5 steering: each repetition sends a follow-up whose first model request waits until the workload releases it;
 * meanwhile the workload steers, then releases the request. The steering must reach the turn's second request.
 */
import { type Gate, gate, nowUs, warmUp } from "../Measure.js"
import { fiveTokens } from "../Runtime.js"
import type { Workload } from "../Workload.js"
import { check, checkEqual, checkOrder } from "../Workload.js"

export const W5: Workload = {
  id: "W5",
  title: "steering",
  description: "N turns whose first request waits while a steer is sent; the steer verified in the second request",
  sizes: { full: 500, quick: 200, smoke: 3 },
  metrics: [
    { id: "usPerTurn", label: "µs per steered turn", unit: "µs", better: "lower", headline: true }
  ],
  run: async (runtime, n, size) => {
    if (size !== "smoke") await warmUp(runtime)
    let started: Gate = gate()
    let release: Gate = gate()
    let steerText = ""
    let seen = 0
    let requests = 0
    const agent = await runtime.createAgent({
      script: ({ index, userTexts }) => {
        requests++
        if (index % 2 === 0) {
          return {
            ...fiveTokens,
            wait: (k) => {
              if (k !== 0) return undefined
              started.open()
              return release.promise
            }
          }
        }
        if (userTexts().at(-1) === steerText) seen++
        return fiveTokens
      }
    })
    const expected: Array<string> = []
    const start = nowUs()
    for (let i = 0; i < n; i++) {
      started = gate()
      release = gate()
      steerText = `steer ${i}`
      expected.push(`prompt ${i}`, steerText)
      await agent.followUp(`prompt ${i}`)
      await started.promise
      await agent.steer(steerText)
      release.open()
      await agent.waitIdle()
    }
    const elapsed = nowUs() - start
    const transcript = await agent.transcript()
    await agent.dispose()
    return {
      figures: { usPerTurn: elapsed / n },
      checks: [
        check("steer was the last user message of the 2nd request", seen === n, `${seen} of ${n}`),
        checkEqual("model requests", requests, 2 * n),
        checkEqual("text replies", transcript.textReplies, 2 * n),
        checkOrder("prompts and steering in log order", transcript.userTexts, expected)
      ]
    }
  }
}
