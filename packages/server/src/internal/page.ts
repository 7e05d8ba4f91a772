/**
 * The web page served at `/` (sessions, a streaming chat, the inbox with drop / edit / reorder, pending approvals,
 * the goal's status with set / pause / resume (R245), tool calls with their arguments and output): one HTML document
 * with a small script module, no framework and no build step, kept in the package's code so the installed package
 * serves it as it is. It talks to the API like any client: the token from the page's own field (kept in
 * `localStorage`), the events through `EventSource` (`?access_token=`, which cannot set headers; the browser resends
 * `Last-Event-ID` when it reconnects by itself).
 */

const script = String.raw`
const $ = (id) => document.getElementById(id)
const state = { session: undefined, source: undefined, lastSeq: -1, seqs: [], status: "idle", answer: undefined }
const token = () => $("token").value
const api = async (method, path, body) => {
  const response = await fetch(path, {
    method,
    headers: { authorization: "Bearer " + token(), "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  if (!response.ok) { $("error").textContent = response.status + " " + text; throw new Error(text) }
  $("error").textContent = ""
  return text === "" ? undefined : JSON.parse(text)
}
const message = (text, source) => ({ content: [{ type: "text", text }], source: source ?? { kind: "user" } })
const line = (cls, text) => {
  const div = document.createElement("div")
  div.className = cls
  div.textContent = text
  $("log").append(div)
  div.scrollIntoView({ block: "end" })
  return div
}

async function listSessions() {
  const sessions = await api("GET", "/sessions")
  $("sessions").replaceChildren(...sessions.map((s) => {
    const li = document.createElement("li")
    const a = document.createElement("a")
    a.href = "#" + s.id
    a.textContent = (s.title ?? s.id) + " · " + s.turns + " turns"
    li.append(a)
    return li
  }))
}

const button = (text, cls, onclick) => {
  const b = document.createElement("button")
  b.textContent = text
  b.className = cls
  b.onclick = onclick
  return b
}
const textOf = (content) => content.map((b) => b.text ?? "").join("")
const change = (route, body) => api("POST", "/sessions/" + state.session + "/" + route, body).then(refreshInbox)

async function refreshInbox() {
  if (state.session === undefined) return
  const items = await api("GET", "/sessions/" + state.session + "/inbox")
  $("inbox").replaceChildren(...items.map((item) => {
    const li = document.createElement("li")
    li.dataset.id = item.id
    const text = document.createElement("span")
    text.className = "text"
    text.textContent = item.placement + ": " + textOf(item.content) + " "
    li.append(text)
    // Up: one place earlier within its own FIFO (queued turns, or steering).
    const fifo = items.filter((other) => other.placement === item.placement)
    const position = fifo.findIndex((other) => other.id === item.id)
    if (position > 0) li.append(button("↑", "up", () => change("move", { id: item.id, position: position - 1 })))
    li.append(button("edit", "edit", () => {
      const input = document.createElement("input")
      input.className = "edit-text"
      input.value = textOf(item.content)
      const save = button("save", "save", () =>
        change("edit", { id: item.id, message: { content: [{ type: "text", text: input.value }], source: item.source } }))
      li.replaceChildren(input, save)
      input.focus()
    }))
    li.append(button("drop", "drop", () => change("withdraw", { id: item.id })))
    return li
  }))
}

/** The session's goal; the panel hides when the server has no goal system for it. */
async function refreshGoal() {
  if (state.session === undefined) return
  const response = await fetch("/sessions/" + state.session + "/goal", { headers: { authorization: "Bearer " + token() } })
  $("goal-panel").classList.toggle("hidden", !response.ok)
  if (!response.ok) return
  const status = await response.json()
  $("goal").textContent = status.goal === undefined
    ? "no goal"
    : status.goal.objective + " · " + status.goal.phase + " · " + status.roundsStarted + " rounds · " + status.activation
}
const goalAction = (method, path, body) =>
  api(method, "/sessions/" + state.session + "/goal" + path, body).then(refreshGoal)

async function refreshApprovals() {
  if (state.session === undefined) return
  const pending = await api("GET", "/sessions/" + state.session + "/approvals")
  const answer = (callId, body) =>
    api("POST", "/sessions/" + state.session + "/approve", { callId, answer: body }).then(refreshApprovals)
  $("approvals").replaceChildren(...pending.map((p) => {
    const li = document.createElement("li")
    li.dataset.id = p.callId
    li.textContent = p.name + "(" + p.arguments + ") "
    const allow = document.createElement("button")
    allow.textContent = "approve"
    allow.className = "approve"
    allow.onclick = () => answer(p.callId, { kind: "allow" })
    const deny = document.createElement("button")
    deny.textContent = "deny"
    deny.className = "deny"
    deny.onclick = () => answer(p.callId, { kind: "deny", reason: "denied in the web page" })
    li.append(allow, deny)
    return li
  }))
}

function onDurable(event) {
  if (event.seq <= state.lastSeq) { $("duplicates").textContent = String(Number($("duplicates").textContent) + 1); return }
  state.lastSeq = event.seq
  state.seqs.push(event.seq)
  $("seqs").textContent = state.seqs.join(",")
  if (event.data?.source?.kind === "goal") refreshGoal()
  switch (event.type) {
    case "user/message":
      if (event.data.source.kind === "goal") {
        // The goal's own messages fold away: their text is the protocol, the summary says which round.
        const details = document.createElement("details")
        details.className = "goal"
        const summary = document.createElement("summary")
        summary.textContent = "◎ goal " + (event.data.source.round === 0 ? "change" : "round " + event.data.source.round)
        const text = document.createElement("pre")
        text.textContent = textOf(event.data.content)
        details.append(summary, text)
        $("log").append(details)
      } else line("user", "› " + textOf(event.data.content))
      break
    case "steering/message":
      line("user", "↪ " + textOf(event.data.content))
      break
    case "assistant/chunk":
      if (event.data.chunk.type === "text-delta") {
        if (state.answer === undefined) state.answer = line("assistant", "")
        state.answer.textContent += event.data.chunk.delta
      }
      break
    case "tool/call": {
      state.answer = undefined
      const details = document.createElement("details")
      details.className = "tool"
      details.dataset.call = event.data.callId
      const summary = document.createElement("summary")
      summary.textContent = "⚙ " + event.data.name
      const args = document.createElement("pre")
      args.textContent = event.data.arguments
      details.append(summary, args)
      $("log").append(details)
      break
    }
    case "tool/result": {
      const details = [...document.querySelectorAll("details.tool")].find((d) => d.dataset.call === event.data.callId)
      const output = document.createElement("pre")
      output.className = "output"
      output.textContent = event.data.content.map((b) => b.text).join("")
      if (details !== undefined) {
        details.querySelector("summary").textContent += event.data.isError ? " ✗" : " ✓"
        details.append(output)
      }
      break
    }
    case "step/end":
      state.answer = undefined
      break
    case "turn/end":
      state.answer = undefined
      line("turn", "turn " + event.data.turn + " " + event.data.reason.kind)
      listSessions()
      refreshGoal()
      break
  }
}

function onLive(event) {
  if (event.type === "agent/status") {
    state.status = event.status
    $("status").textContent = event.status
  }
  if (event.type.startsWith("agent/inbox/")) refreshInbox()
  if (event.type.startsWith("agent/approval/")) refreshApprovals()
}

function connect(after) {
  state.source?.close()
  const query = "?access_token=" + encodeURIComponent(token()) + (after >= 0 ? "&lastEventId=" + after : "")
  const source = new EventSource("/sessions/" + state.session + "/events" + query)
  state.source = source
  source.onmessage = (e) => onDurable(JSON.parse(e.data))
  source.addEventListener("live", (e) => onLive(JSON.parse(e.data)))
  source.addEventListener("ready", () => { $("connection").textContent = "connected" })
  // Fell behind: the server ended the stream; resume after the last seq shown.
  source.addEventListener("overflow", () => connect(state.lastSeq))
  source.onerror = () => { $("connection").textContent = "reconnecting" }
}

async function open(id) {
  state.session = id
  state.lastSeq = -1
  state.seqs = []
  state.answer = undefined
  $("log").replaceChildren()
  $("title").textContent = id
  const snapshot = await api("GET", "/sessions/" + id + "/snapshot?tail=1")
  $("status").textContent = snapshot.status
  connect(-1)
  await refreshInbox()
  await refreshApprovals()
  await refreshGoal()
}

const send = (route, text, source) =>
  api("POST", "/sessions/" + state.session + "/" + route, { message: message(text, source) }).then(refreshInbox)

$("token").value = localStorage.getItem("harness-token") ?? ""
$("token").onchange = () => { localStorage.setItem("harness-token", token()); listSessions() }
$("new").onclick = async () => {
  const session = await api("POST", "/sessions", {})
  location.hash = session.id
}
$("prompt").onkeydown = (e) => {
  if (e.key !== "Enter" || $("prompt").value.trim() === "") return
  e.preventDefault()
  const text = $("prompt").value
  $("prompt").value = ""
  send("steer", text)
}
$("queue").onclick = () => { const text = $("prompt").value; $("prompt").value = ""; send("followup", text) }
$("inject").onclick = () => {
  const text = $("prompt").value
  $("prompt").value = ""
  send("inject", text, { kind: "plugin", plugin: "web" })
}
$("cancel-keep").onclick = () =>
  api("POST", "/sessions/" + state.session + "/cancel", { cause: "user", options: { keepInbox: true } }).then(refreshInbox)
$("cancel-drop").onclick = () =>
  api("POST", "/sessions/" + state.session + "/cancel", { cause: "user" }).then(refreshInbox)
$("goal-set").onclick = () => {
  const objective = $("goal-objective").value.trim()
  if (objective === "") return
  $("goal-objective").value = ""
  goalAction("PUT", "", { objective })
}
$("goal-pause").onclick = () => goalAction("POST", "/pause")
$("goal-resume").onclick = () => goalAction("POST", "/resume")
window.onhashchange = () => { if (location.hash.length > 1) open(decodeURIComponent(location.hash.slice(1))); listSessions() }
if (token() !== "") listSessions()
if (location.hash.length > 1) open(decodeURIComponent(location.hash.slice(1)))
`

/** The page. */
export const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Harness</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 16rem 1fr 16rem; height: 100vh; }
  aside, main { padding: .75rem; overflow: auto; }
  aside { background: #f4f4f5; }
  main { display: flex; flex-direction: column; }
  #log { flex: 1; overflow: auto; }
  .user { color: #1d4ed8; margin: .4rem 0; }
  .assistant { white-space: pre-wrap; margin: .4rem 0; }
  .turn { color: #71717a; font-size: 12px; }
  .tool { color: #52525b; margin: .3rem 0; }
  .tool pre, .goal pre { margin: .2rem 0 .2rem 1rem; white-space: pre-wrap; }
  .goal { color: #7c3aed; margin: .3rem 0; }
  #prompt { width: 100%; box-sizing: border-box; padding: .5rem; }
  .bar { display: flex; gap: .4rem; margin-top: .4rem; align-items: center; }
  #error { color: #b91c1c; }
  .hidden { display: none; }
</style>
</head>
<body>
<aside>
  <label>Token <input id="token" type="password" autocomplete="off"></label>
  <h3>Sessions</h3>
  <button id="new">New session</button>
  <ul id="sessions"></ul>
</aside>
<main>
  <h2 id="title">Pick or create a session</h2>
  <div id="log"></div>
  <input id="prompt" placeholder="Enter steers the running turn (or starts one); Queue adds a turn; Inject adds context">
  <div class="bar">
    <button id="queue">Queue</button>
    <button id="inject">Inject</button>
    <button id="cancel-keep">Cancel, keep inbox</button>
    <button id="cancel-drop">Cancel, discard inbox</button>
    <span>status: <b id="status">idle</b></span>
    <span id="connection"></span>
  </div>
  <div id="error"></div>
  <div class="hidden">seqs <span id="seqs"></span> duplicates <span id="duplicates">0</span></div>
</main>
<aside>
  <h3>Inbox</h3>
  <ul id="inbox"></ul>
  <h3>Approvals</h3>
  <ul id="approvals"></ul>
  <div id="goal-panel" class="hidden">
    <h3>Goal</h3>
    <p id="goal"></p>
    <input id="goal-objective" placeholder="objective">
    <div class="bar">
      <button id="goal-set">Set</button>
      <button id="goal-pause">Pause</button>
      <button id="goal-resume">Resume</button>
    </div>
  </div>
</aside>
<script type="module">${script}</script>
</body>
</html>
`
