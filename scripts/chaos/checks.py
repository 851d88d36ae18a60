"""What the run must show, judged from the result events, Postgres, the store and the broker's offsets once every
job is done: nothing lost or left failed, no version bumped twice or overwritten by an older request, the bytes
behind every published avatar those of the version Postgres names, no stuck partition, every hostile file, malformed
message and attack with its own outcome, no worker killed by an upload, nothing left of a forgotten user."""
import hashlib
import os
import signal
from types import SimpleNamespace

from .results import outcome
from .sources import CONTAINED, MUTATED_OWN_TRANSIENT
from .stack import TRANSIENT, log, psql, s3, s3_all_keys
from .workers import describe_exit


def forgotten_left_behind(env, database, users, work):
    """What is left of the forgotten users anywhere: every object of the bucket's users/ prefix listed, every text or
    uuid column of every table of the schema queried (the tombstones apart: they are the forget's own record)."""
    left = []
    owners = {}
    for key in s3_all_keys(env, "users/", work):
        owners.setdefault(key.split("/")[1], []).append(key)
    for user in sorted(users):
        if owners.get(user):
            left.append(f"{user[:8]}: {len(owners[user])} objects, e.g. {owners[user][0]}")
    columns = psql(database, """
        SELECT table_name, column_name FROM information_schema.columns
         WHERE table_schema = current_schema() AND data_type IN ('uuid', 'text', 'character varying')
           AND table_name <> 'avatar_forgotten_users'""")
    listed = ",".join(f"'{user}'" for user in sorted(users))
    for table, column in columns:
        count = psql(database, f'SELECT count(*) FROM "{table}" WHERE "{column}"::text IN ({listed})')[0][0]
        if count != "0":
            left.append(f"{table}.{column}: {count} rows")
    return left


def check(snapshot, plan, sources, cli_forgotten, env, database, logs, ends, commits, exits):
    """Every check's findings (lists of what is wrong, and counts), as a namespace for the report."""
    expected, source_of, contained, mutations, forgets = (plan.expected, plan.source_of, plan.contained,
                                                          plan.mutations, plan.forgets)
    latest = {job: rs[-1] for job, rs in snapshot.items() if job in expected}
    lost = sorted(set(expected) - set(latest))
    unresolved = sorted(job for job, r in latest.items() if outcome(r) in TRANSIENT and expected[job] != "contained"
                        and not (expected[job] == "mutated" and outcome(r) in MUTATED_OWN_TRANSIENT))
    by_outcome = {}
    for job, r in latest.items():
        by_outcome[outcome(r)] = by_outcome.get(outcome(r), 0) + 1
    hostile_wrong = sorted(
        f"{source_of[job]}: {outcome(r)}" for job, r in latest.items()
        if source_of.get(job) in sources and sources[source_of[job]][1] == "hostile"
        # A hostile job that lost before its source was read (a newer avatar of its user is published) is
        # SUPERSEDED or DUPLICATE: right too, it never touched the file.
        and (sources[source_of[job]][2] is not None
             and outcome(r) not in sources[source_of[job]][2] | {"SUPERSEDED", "DUPLICATE"}
             or outcome(r) in TRANSIENT | {"APPLIED"}))
    malformed_wrong = sorted(job for job, kind in expected.items()
                             if kind == "malformed" and job in latest
                             and outcome(latest[job]) not in {"MALFORMED_REQUEST", "INVALID_ID", "INVALID_REQUEST"})
    # Each attack on a render helper: its code, on the first render (one result, one attempt).
    contained_wrong = []
    for request in contained:
        name, results_of = source_of[request.job_id], snapshot.get(request.job_id, [])
        want = CONTAINED[name][1]
        if not results_of:
            contained_wrong.append(f"{name}: no result")
        elif outcome(results_of[0]) != want or results_of[0].failure.attempts != 1:
            contained_wrong.append(f"{name}: {outcome(results_of[0])} (attempts {results_of[0].failure.attempts})")
    mutated_outcomes = {}
    for request in mutations:
        if request.job_id in latest:
            name = outcome(latest[request.job_id])
            mutated_outcomes[name] = mutated_outcomes.get(name, 0) + 1
    forget_wrong = sorted(job for job in forgets if job in latest and outcome(latest[job]) != "FORGOTTEN")

    # Version bumps from the result events (the ledger is pruned): every APPLIED or DUPLICATE result names the
    # version its job applied. A job naming two versions was bumped twice; a version named by two jobs, or above
    # the profile's, too. Forgotten users start again and are checked apart.
    forgotten_users = set(forgets.values()) | set(cli_forgotten)
    versions_of_job, jobs_of_version, requested_of = {}, {}, {}
    for job, rs in snapshot.items():
        for r in rs:
            if outcome(r) in ("APPLIED", "DUPLICATE") and r.user_id not in forgotten_users:
                versions_of_job.setdefault(job, set()).add(r.success.avatar_version)
                jobs_of_version.setdefault((r.user_id, r.success.avatar_version), set()).add(job)
                requested_of[job] = r.requested_at.ToNanoseconds()
    profiles = {user: int(version) for user, version in psql(database, "SELECT id, avatar_version FROM profiles")}
    bumped_twice = ([f"job {job[:8]}: versions {sorted(v)}" for job, v in versions_of_job.items() if len(v) > 1]
                    + [f"user {u[:8]} v{v}: jobs {sorted(j)}" for (u, v), j in jobs_of_version.items() if len(j) > 1]
                    + [f"user {u[:8]} v{v} > profile {profiles.get(u, 0)}" for (u, v) in jobs_of_version
                       if v > profiles.get(u, 0)])
    double_bumps = len(bumped_twice)
    for line in bumped_twice:
        log("double bump? " + line)
    # A version whose job's APPLIED result was lost (killed between commit and result) and whose redelivery found
    # the row pruned (SUPERSEDED) is named by no result: counted, not a failure.
    unattributed = sum(1 for user, version in profiles.items() if user not in forgotten_users
                       for v in range(1, version + 1) if (user, v) not in jobs_of_version)
    stale, newest = 0, {}
    for (user, version) in sorted(jobs_of_version):
        requested = max(requested_of[job] for job in jobs_of_version[(user, version)])
        if requested < newest.get(user, 0):
            stale += 1
        newest[user] = max(newest.get(user, 0), requested)
    left_behind = forgotten_left_behind(env, database, forgotten_users, logs)
    tombstones = int(psql(database, "SELECT count(*) FROM avatar_forgotten_users WHERE user_id::text IN ("
                                    + ",".join(f"'{u}'" for u in sorted(forgotten_users)) + ")")[0][0])
    has_digest = psql(database, """
        SELECT count(*) FROM information_schema.columns
         WHERE table_name = 'avatar_crop_jobs' AND column_name = 'avatar_sha256'
           AND table_schema = current_schema()""")[0][0] == "1"
    current = [] if not has_digest else psql(database, """
        SELECT p.id, p.avatar_path, p.avatar_version, j.avatar_sha256
          FROM profiles p JOIN avatar_crop_jobs j
            ON j.user_id = p.id AND j.status = 'succeeded' AND j.avatar_version = p.avatar_version
         WHERE p.avatar_version > 0""")
    mismatched = [] if has_digest else ["the ledger records no avatar_sha256: bytes cannot be checked"]
    for user, path, version, digest in current:
        fetched = os.path.join(logs, "fetched.png")
        status = s3(env, "GET", path, output=fetched)
        actual = hashlib.sha256(open(fetched, "rb").read()).hexdigest() if status == 200 else f"HTTP {status}"
        if actual != digest:
            mismatched.append(f"version {version}: {actual[:12]} != {digest[:12]}")
    stuck = sorted(p for p, end in ends.items() if commits.get(p, 0) < end)
    crashes = [code for _, code in exits if code != -signal.SIGKILL]
    # A worker that died of a signal the harness did not send: an upload reached it.
    killed_by_upload = [describe_exit(code) for code in crashes if code < 0]
    found = dict(locals())
    for name in ("snapshot", "plan", "sources", "env", "database", "logs", "exits"):
        del found[name]
    return SimpleNamespace(**found)
