"""`python -m chaos`: the run, phase by phase (the package's docstring says what it does and checks)."""
import argparse
import faulthandler
import os
import random
import signal
import sys
import time

from avatar.crop.v1 import common_pb2

from . import __doc__ as description, checks, faults, jobs, report, root, sources, stack
from .results import Results
from .stack import log, wait_for
from .workers import Workers


def arguments():
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with the avatar-cropper binary")
    parser.add_argument("--run", required=True, help="services.sh run folder (its env file)")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=int, default=300, help="seconds to wait for every result")
    parser.add_argument("--report", help="write the figures as JSON here")
    parser.add_argument("--formats", default=os.environ.get("CHAOS_FORMATS", "png,webp,avif"),
                        help="the avatar formats a third of the requests ask for (empty: none ask)")
    return parser.parse_args()


def main():
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 prints every thread's stack
    args = arguments()
    rng = random.Random(args.seed)
    env = stack.load_env(os.path.join(args.run, "env"))
    brokers, database = env["AVATAR_TEST_KAFKA_BROKERS"], env["AVATAR_TEST_DATABASE_URL"]
    binary = os.path.join(args.bin, "avatar-cropper")
    logs = os.path.join(args.run, "chaos")
    os.makedirs(logs, exist_ok=True)
    began = time.monotonic()
    worker_env = stack.worker_environment(env)
    stack.prepare(binary, worker_env, env)

    uploads = sources.upload(env, logs)
    formats = [common_pb2.ImageFormat.Value("IMAGE_FORMAT_" + name.strip().upper())
               for name in args.formats.split(",") if name.strip()]
    plan = jobs.plan(rng, args.jobs, uploads, formats)

    results = Results(brokers)
    if not results.joined.wait(30):
        sys.exit("chaos: the result reader did not join its group within 30 s")
    workers = Workers(binary, worker_env, logs)
    log(f"producing {len(plan.jobs)} messages ({len(plan.expected)} jobs, {len(plan.forgets)} forgets) over ~40 s; "
        "faults and pruning start now")
    running = faults.Running(binary, worker_env, database, workers, os.path.join(root, "scripts", "services.sh"),
                             plan.cli_forgets)
    unsent = jobs.produce(brokers, plan)
    if unsent:
        sys.exit(f"chaos: {unsent} messages were never acknowledged by the broker")
    running.chaos.join()

    log("waiting for every job's result")
    wait_for("every job's result", lambda: plan.expected.keys() <= results.snapshot().keys(), args.timeout)
    replays = faults.replay_transient(binary, worker_env, results, plan.expected, logs, args.timeout)

    # Every DLQ record of every forgotten user replayed: none may bring anything back.
    running.forgetter.join(600)
    everyone_forgotten = set(plan.forgets.values()) | set(running.cli_forgotten)
    log(f"replaying the DLQ records of the {len(everyone_forgotten)} forgotten users")
    faults.replay_forgotten(binary, worker_env, everyone_forgotten, logs)
    time.sleep(15)  # their results, if any record was replayed
    # Committed offsets catch up within a few commit intervals once the last job is finished.
    ends = stack.partition_ends(brokers, stack.REQUESTS)
    wait_for("the group's commits to reach the end of every partition",
             lambda: all(stack.committed(brokers, stack.REQUESTS).get(p, 0) >= end for p, end in ends.items()), 60)
    finished = time.monotonic() - began
    commits = stack.committed(brokers, stack.REQUESTS)
    running.stop_pruning()
    workers.stop()
    results.stop()

    found = checks.check(results.snapshot(), results.newest_results(), results.metrics_snapshot(), plan, uploads, running.cli_forgotten, env,
                         database, logs, ends, commits, workers.exits)
    report.report(found, plan.jobs, running.prunes, replays, running.events, finished, args.report)


if __name__ == "__main__":
    main()
