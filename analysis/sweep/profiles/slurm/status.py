#!/usr/bin/env python3
"""Snakemake's cluster-status command for the Slurm profile: prints success, failed or running
for the Slurm job ID given, from scontrol (which knows a job until MinJobAge after it ends,
300 s by default, while Snakemake polls every few seconds) and else from sacct where Slurm keeps
accounting."""
import subprocess
import sys

RUNNING = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING",
           "STAGE_OUT", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}


def state(jobid):
    p = subprocess.run(["scontrol", "show", "job", "-o", jobid], capture_output=True, text=True, check=False)
    for field in p.stdout.split():
        if field.startswith("JobState="):
            return field.split("=", 1)[1]
    p = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", jobid], capture_output=True, text=True,
                       check=False)
    lines = p.stdout.split()
    return lines[0].split()[0] if p.returncode == 0 and lines else None


def main():
    s = state(sys.argv[1])
    if s == "COMPLETED":
        print("success")
    elif s in RUNNING:
        print("running")
    else:  # FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ..., or a job Slurm forgot
        print("failed")


if __name__ == "__main__":
    main()
