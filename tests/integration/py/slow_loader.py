"""A loop starved by its data loader: STEPS steps, each waiting WAIT s for
data and computing COMPUTE s, reported with the step's whole time and its
measured wait (report_step, as the callbacks do); with a fourth argument
`compute-only`, with only the compute as the step's time, as a client
that times the block around the compute does."""
import sys
import time

import gpulse

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
wait_s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.06
compute_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.04
compute_only = len(sys.argv) > 4 and sys.argv[4] == "compute-only"
prev = time.time()
for _ in range(steps):
    t0 = time.time()
    time.sleep(wait_s)  # the data loader
    waited = time.time() - t0
    t1 = time.time()
    time.sleep(compute_s)  # the step's compute
    now = time.time()
    gpulse.report_step(now - (t1 if compute_only else prev), samples=8, wait=waited)
    prev = now
gpulse.flush()
