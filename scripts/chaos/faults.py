"""What is done to the stack while it runs: workers killed, Postgres restarted, the broker killed, the store stopped
(chaos_schedule); the ledger pruned and the tombstones aged all along (prune_loop); users forgotten with the CLI
(forget_loop); and afterwards the DLQ replays (replay_transient, replay_forgotten)."""
import os
import re
import subprocess
import threading
import time

from .results import outcome
from .sources import MUTATED_OWN_TRANSIENT
from .stack import TRANSIENT, log, psql, wait_for


def chaos_schedule(workers, services, events):
    """Faults at fixed times after the first message; each is logged and recorded in `events`."""

    def at(second, name, action):
        delay = second - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)
        log(name)
        events.append((round(time.monotonic() - start, 1), name))
        action()

    def restart(service, down):
        subprocess.run([services, "kill", service], check=True)
        time.sleep(down)
        subprocess.run([services, "resume", service], check=True)

    start = time.monotonic()
    at(8, "kill -9 worker 0", lambda: workers.kill(0))
    at(18, "restart Postgres (immediate shutdown, 3 s down)", lambda: restart("postgres", 3))
    at(30, "kill -9 worker 1", lambda: workers.kill(1))
    at(42, "kill -9 the broker, 2 s down, restart on its s3:// log", lambda: restart("kafka", 2))
    at(56, "stop the object store for 8 s", lambda: restart("s3", 8))
    at(72, "kill -9 worker 0", lambda: workers.kill(0))


def prune_loop(binary, environment, database, stop, counts):
    """Prunes aggressively while the workers run: moves every finished ledger row two hours back (as if the
    retention had passed; rows being rendered keep their time) and the forget tombstones alike (age_tombstones), and
    prunes with a one-hour retention."""
    env = dict(environment, AVATAR_LEDGER_RETENTION_HOURS="1", AVATAR_LEDGER_PRUNE_BATCH="200")
    while not stop.wait(3):
        try:
            psql(database, "UPDATE avatar_crop_jobs SET finished_at = finished_at - interval '2 hours' "
                           "WHERE status <> 'started'")
            age_tombstones(database)
            done = subprocess.run([binary, "prune"], env=env, capture_output=True, text=True, timeout=120)
            match = re.search(r"pruned (\d+)", done.stdout)
            if match:
                counts["rows"] += int(match.group(1))
                counts["runs"] += 1
        except (subprocess.SubprocessError, OSError):
            counts["failed"] += 1  # Postgres is restarted on purpose; the next round prunes


def age_tombstones(database):
    """Moves every forget tombstone's record two hours back, as prune_loop does to the ledger rows: a tombstone must
    outlive every message that can come back, whatever the retention (migration 0009 keeps them)."""
    psql(database, "UPDATE avatar_forgotten_users SET recorded_at = recorded_at - interval '2 hours'")


def forget_loop(binary, environment, planned, started, forgotten):
    """Runs each planned CLI forget at its time, all on threads of their own (a forget on S3 waits the store's deadline
    before its last look, so one after another would miss their faults). A forget the faults make fail (a store
    stopped for longer than its retries) stays pending and `--wait` waits for the workers to finish it (docs/DATA.md,
    window 4); one that could not even be recorded (Postgres down) is run again until it returns 0, as an operator
    would. The user counts as forgotten from then on."""

    def forget(second, user):
        delay = second - (time.monotonic() - started)
        if delay > 0:
            time.sleep(delay)
        attempts = 0
        while True:
            attempts += 1
            try:
                done = subprocess.run([binary, "forget", "--user", user, "--wait", "--wait-timeout", "600"],
                                      env=environment, capture_output=True, text=True, timeout=700)
                if done.returncode == 0:
                    break
            except subprocess.SubprocessError:
                pass
            time.sleep(2)
        log(f"forgot user {user[:8]} with the CLI at {second} s ({attempts} attempt(s))")
        forgotten[user] = attempts

    threads = [threading.Thread(target=forget, args=item, daemon=True) for item in planned]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class Running:
    """The fault schedule, the pruner and the CLI forgets, each on a thread of its own, started together as the
    first message is produced."""

    def __init__(self, binary, worker_env, database, workers, services, cli_forgets):
        self.events = []
        self.chaos = threading.Thread(target=chaos_schedule, args=(workers, services, self.events), daemon=True)
        self.chaos.start()
        self.prune_stop, self.prunes = threading.Event(), {"rows": 0, "runs": 0, "failed": 0}
        self.pruner = threading.Thread(target=prune_loop, args=(binary, worker_env, database, self.prune_stop,
                                                                self.prunes), daemon=True)
        self.pruner.start()
        self.cli_forgotten = {}
        self.forgetter = threading.Thread(target=forget_loop, args=(binary, worker_env, cli_forgets, time.monotonic(),
                                                                    self.cli_forgotten), daemon=True)
        self.forgetter.start()

    def stop_pruning(self):
        self.prune_stop.set()
        self.pruner.join(180)


def replay_transient(binary, worker_env, results, expected, logs, timeout):
    """Replays what failed transiently (the services were down) and waits for the new results, up to three rounds;
    returns the rounds run."""
    replays = 0
    for _ in range(3):
        latest = {job: rs[-1] for job, rs in results.snapshot().items()}
        pending = {job for job, r in latest.items()
                   if job in expected and expected[job] != "contained" and outcome(r) in TRANSIENT
                   and not (expected[job] == "mutated" and outcome(r) in MUTATED_OWN_TRANSIENT)}
        if not pending:
            break
        replays += 1
        counts = {job: len(rs) for job, rs in results.snapshot().items()}
        log(f"replaying the DLQ ({len(pending)} jobs failed transiently)")
        # Only those jobs, as an operator would: a mutated upload that timed out on its own (accepted above) would
        # otherwise come back with them and hold a render slot again, and a job queued behind it could time out.
        command = [binary, "replay", "--idle-seconds", "10"]
        for job in sorted(pending):
            command += ["--job-id", job]
        # Without the database: a forgotten user's record is replayed too, and the workers must supersede it (with
        # it, `replay` would refuse it and the job would stay failed; replay_forgotten runs that way).
        without_database = {name: value for name, value in worker_env.items() if name != "AVATAR_DATABASE_URL"}
        subprocess.run(command, env=without_database, check=True,
                       stdout=open(os.path.join(logs, "replay.log"), "a"))
        wait_for("the replayed jobs' results",
                 lambda: all(len(results.snapshot().get(job, [])) > counts[job] for job in pending), timeout)
    return replays


def replay_forgotten(binary, environment, users, logs):
    """Replays every DLQ record of the forgotten users, permanent failures too: none may publish again. With the
    database, `replay` refuses them all (docs/DATA.md, window 5); the transient replays above go without it, so the
    workers' own rule meets the forgotten users' records there."""
    command = [binary, "replay", "--idle-seconds", "10", "--error-class", "any"]
    for user in sorted(users):
        command += ["--user", user]
    subprocess.run(command, env=environment, check=True, stdout=open(os.path.join(logs, "replay.log"), "a"))
