"""A torchrun-style worker: reports steps for SECONDS, as rank $RANK would."""
import sys
import time

import gpulse

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
end = time.time() + seconds
while time.time() < end:
    with gpulse.step(samples=8):
        time.sleep(0.01)
gpulse.flush()
