"""GNU time's two lines that fleet_scale.sh reads, where /usr/bin/time is not installed:
``timed.py LOG CMD...`` runs CMD and writes its wall time and the largest resident set
of it and its descendants (getrusage of the children) into LOG."""
import resource
import subprocess
import sys
import time

start = time.monotonic()
rc = subprocess.call(sys.argv[2:])
wall = time.monotonic() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as log:
    log.write(f"\tElapsed (wall clock) time (h:mm:ss or m:ss): {int(wall // 60)}:{wall % 60:05.2f}\n")
    log.write(f"\tMaximum resident set size (kbytes): {rss}\n")
sys.exit(rc)
