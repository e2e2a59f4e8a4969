"""Run by tests/test_distributed.py under ``mpiexec``: each rank writes its pid to the file
named on the command line, then hangs, so the test can check a timeout kills every rank."""

import os
import sys
import time

with open(sys.argv[1], "a") as f:
    f.write(f"{os.getpid()}\n")
while True:
    time.sleep(1)
