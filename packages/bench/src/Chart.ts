/**
 * A small hand-written SVG line chart: per-turn cost (log scale, µs) against session length (turns) for each
 * runtime, one polyline per runtime, with grid lines at powers of ten and a legend. No dependencies.
 */

/** One line of the chart. */
export interface Line {
  readonly label: string
  readonly color: string
  /** µs/turn per bucket of `bucketTurns` turns, in session order. */
  readonly values: ReadonlyArray<number>
}

const width = 760
const height = 400
const margin = { left: 70, right: 170, top: 40, bottom: 50 }

const escape = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const axisLabel = (us: number): string => us >= 1000 ? `${us / 1000} ms` : `${us} µs`

/**
 * Renders the chart.
 *
 * Contract: values that are not positive finite numbers are skipped (a log scale cannot place them); the y range
 * spans the powers of ten around the data; bucket `i` is drawn at the session length `(i + 1) × bucketTurns`.
 */
export const render = (options: {
  readonly title: string
  readonly bucketTurns: number
  readonly lines: ReadonlyArray<Line>
}): string => {
  const values = options.lines.flatMap((line) => line.values.filter((v) => Number.isFinite(v) && v > 0))
  const low = Math.pow(10, Math.floor(Math.log10(Math.min(...values, 10))))
  const high = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, 100))))
  const buckets = Math.max(1, ...options.lines.map((line) => line.values.length))
  const turns = buckets * options.bucketTurns
  const plotW = width - margin.left - margin.right
  const plotH = height - margin.top - margin.bottom
  const x = (turn: number) => margin.left + (turn / turns) * plotW
  const y = (us: number) =>
    margin.top + plotH - ((Math.log10(us) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * plotH
  const parts: Array<string> = []
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${margin.left}" y="24" font-size="15" font-weight="bold">${escape(options.title)}</text>`
  )
  for (let decade = low; decade <= high; decade *= 10) {
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(decade).toFixed(1)}" y2="${
        y(decade).toFixed(1)
      }" stroke="#dddddd"/>`,
      `<text x="${margin.left - 8}" y="${(y(decade) + 4).toFixed(1)}" text-anchor="end" fill="#555555">${
        escape(axisLabel(decade))
      }</text>`
    )
    for (const minor of [2, 5]) {
      if (decade * minor < high) {
        parts.push(
          `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(decade * minor).toFixed(1)}" y2="${
            y(decade * minor).toFixed(1)
          }" stroke="#f0f0f0"/>`
        )
      }
    }
  }
  const step = Math.pow(10, Math.floor(Math.log10(turns))) /
    (turns / Math.pow(10, Math.floor(Math.log10(turns))) < 3 ? 2 : 1)
  for (let turn = 0; turn <= turns; turn += step) {
    parts.push(
      `<line x1="${x(turn).toFixed(1)}" x2="${x(turn).toFixed(1)}" y1="${margin.top + plotH}" y2="${
        margin.top + plotH + 5
      }" stroke="#555555"/>`,
      `<text x="${x(turn).toFixed(1)}" y="${
        margin.top + plotH + 18
      }" text-anchor="middle" fill="#555555">${turn}</text>`
    )
  }
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999999"/>`,
    `<text x="${margin.left + plotW / 2}" y="${
      height - 10
    }" text-anchor="middle" fill="#333333">session length (turns)</text>`,
    `<text transform="translate(16 ${
      margin.top + plotH / 2
    }) rotate(-90)" text-anchor="middle" fill="#333333">cost per turn (log scale)</text>`
  )
  options.lines.forEach((line, i) => {
    const points = line.values.flatMap((v, b) =>
      Number.isFinite(v) && v > 0 ? [`${x((b + 1) * options.bucketTurns).toFixed(1)},${y(v).toFixed(1)}`] : []
    )
    parts.push(
      `<polyline fill="none" stroke="${line.color}" stroke-width="2.5" stroke-linejoin="round" points="${
        points.join(" ")
      }"/>`
    )
    const ly = margin.top + 20 + i * 22
    const lx = margin.left + plotW + 16
    parts.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="${ly}" y2="${ly}" stroke="${line.color}" stroke-width="3"/>`,
      `<text x="${lx + 28}" y="${ly + 4}" fill="#222222">${escape(line.label)}</text>`
    )
  })
  parts.push("</svg>")
  return `${parts.join("\n")}\n`
}
