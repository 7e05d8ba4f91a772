/**
 * Every workload, in report order.
 */
import type { Workload } from "./Workload.js"
import { Fleet } from "./workloads/Fleet.js"
import { Memory } from "./workloads/Memory.js"
import { Pace } from "./workloads/Pace.js"
import { W1 } from "./workloads/W1Sequential.js"
import { W2 } from "./workloads/W2Burst.js"
import { W3 } from "./workloads/W3ManyAgents.js"
import { W4 } from "./workloads/W4Tools.js"
import { W5 } from "./workloads/W5Steering.js"
import { W6 } from "./workloads/W6Writes.js"
import { W7 } from "./workloads/W7Resume.js"
import { W8 } from "./workloads/W8Latency.js"

export const workloads: ReadonlyArray<Workload> = [W1, W2, W3, W4, W5, W6, W7, W8, Pace, Fleet, Memory]
