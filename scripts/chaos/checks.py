"""What the run must show, judged from the result events, Postgres, the store and the broker's offsets once every
job is done: nothing lost or left failed, no version bumped twice or overwritten by an older request, the bytes
behind every published avatar those of the version Postgres names, no stuck partition, every hostile file, malformed
message and attack with its own outcome, no worker killed by an upload, nothing left of a forgotten user, every
object of every current version of its key's format and size, its version's bytes, without EXIF, XMP or IPTC."""
import hashlib
import hmac
import os
import re
import signal
from types import SimpleNamespace

from .results import outcome, stages_past_total
from .sources import CONTAINED, MUTATED_OWN_TRANSIENT
from .stack import TRANSIENT, log, psql, s3, s3_all_keys, s3_versions
from .workers import describe_exit


def forgotten_left_behind(env, database, users, work):
    """What is left of the forgotten users anywhere: every object of the bucket's users/ prefix listed, every version
    and delete marker under each one's prefix (the bucket keeps versions), every text or uuid column of every table of
    the schema queried (the tombstones and the last looks of completed forgets apart: they are the forget's own
    record), and every forget not completed."""
    left = []
    owners = {}
    for key in s3_all_keys(env, "users/", work):
        owners.setdefault(key.split("/")[1], []).append(key)
    for user in sorted(users):
        if owners.get(user):
            left.append(f"{user[:8]}: {len(owners[user])} objects, e.g. {owners[user][0]}")
        versions = s3_versions(env, f"users/{user}/", work)
        if versions:
            left.append(f"{user[:8]}: {versions} old versions or delete markers")
    columns = psql(database, """
        SELECT table_name, column_name FROM information_schema.columns
         WHERE table_schema = current_schema() AND data_type IN ('uuid', 'text', 'character varying')
           AND table_name NOT IN ('avatar_forgotten_users', 'avatar_pending_forgets')""")
    listed = ",".join(f"'{user}'" for user in sorted(users))
    unfinished = psql(database, "SELECT count(*) FROM avatar_pending_forgets WHERE NOT last_look"
                                f" AND user_id::text IN ({listed})")[0][0]
    if unfinished != "0":
        left.append(f"{unfinished} forgets not completed")
    for table, column in columns:
        count = psql(database, f'SELECT count(*) FROM "{table}" WHERE "{column}"::text IN ({listed})')[0][0]
        if count != "0":
            left.append(f"{table}.{column}: {count} rows")
    return left


# The loader libvips names for each key extension (`vips-loader`), for the formats check.
LOADERS = {"png": "pngload", "jpg": "jpegload", "webp": "webpload", "avif": "heifload"}
PRIVATE_FIELDS = ("exif-data", "xmp-data", "iptc-data")


def check_published_formats(env, database, logs):
    """Every object of every current version (its avatar and renditions, as the ledger names them): a file of the
    key's format at the key's size, byte-identical to the version's own copy, without EXIF, XMP or IPTC. Returns
    (objects checked, problems)."""
    import pyvips

    rows = psql(database, """
        SELECT p.id, p.avatar_version, j.job_id, j.avatar_path, coalesce(array_to_string(j.rendition_paths, ','), '')
          FROM profiles p JOIN avatar_crop_jobs j
            ON j.user_id = p.id AND j.status = 'succeeded' AND j.avatar_version = p.avatar_version
         WHERE p.avatar_version > 0""")
    checked, problems = 0, []
    fetched = os.path.join(logs, "fetched-format")
    for user, version, job, path, renditions in rows:
        tag = hashlib.sha256(job.encode()).hexdigest()[:16]
        for key in [path] + [k for k in renditions.split(",") if k]:
            folder, name = key.rsplit("/", 1)
            match = re.fullmatch(r"avatar_(\d+)\.(png|jpg|webp|avif)", name)
            if not match:
                problems.append(f"{key}: not an avatar key")
                continue
            versioned = f"{folder}/versions/{version}/{tag}/{name}"
            if s3(env, "GET", key, output=fetched) != 200:
                problems.append(f"{key}: missing")
                continue
            data = open(fetched, "rb").read()
            if s3(env, "GET", versioned, output=fetched) != 200 or open(fetched, "rb").read() != data:
                problems.append(f"{key}: not version {version}'s bytes")
            checked += 1
            try:
                image = pyvips.Image.new_from_buffer(data, "")
            except pyvips.Error as error:
                problems.append(f"{key}: not a valid file ({str(error).splitlines()[0]})")
                continue
            size = int(match.group(1))
            if (image.width, image.height) != (size, size):
                problems.append(f"{key}: {image.width}x{image.height}")
            if image.get("vips-loader").removesuffix("_buffer") != LOADERS[match.group(2)]:
                problems.append(f"{key}: read by {image.get('vips-loader')}")
            leaked = [field for field in image.get_fields() if field in PRIVATE_FIELDS or field.startswith("exif-")]
            if leaked:
                problems.append(f"{key}: carries {leaked}")
    return checked, problems


def check(snapshot, newest_results, metrics, plan, sources, cli_forgotten, env, database, logs, ends, commits, exits):
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
    # The compacted results topic keeps the newest record of each key: for a forgotten user it must be the forget's
    # null, not a result (docs/DATA.md, window 5).
    results_kept = sorted(user[:8] for user in forgotten_users if newest_results.get(str(user).lower()) is not None)
    # Tombstones are HMAC-SHA256(database.tombstone-key, the user id's lower-case text) (migration 0012).
    key = env["AVATAR_TEST_TOMBSTONE_KEY"].encode()
    tombstones = int(psql(database, "SELECT count(*) FROM avatar_forgotten_users WHERE encode(user_key, 'hex') IN ("
                                    + ",".join(f"'{hmac.new(key, str(u).lower().encode(), hashlib.sha256).hexdigest()}'"
                                               for u in sorted(forgotten_users)) + ")")[0][0])
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
    objects_checked, format_problems = check_published_formats(env, database, logs)
    stuck = sorted(p for p, end in ends.items() if commits.get(p, 0) < end)
    crashes = [code for _, code in exits if code != -signal.SIGKILL]
    # A worker that died of a signal the harness did not send: an upload reached it.
    killed_by_upload = [describe_exit(code) for code in crashes if code < 0]
    metrics_records = len(metrics)
    stages_past = stages_past_total(metrics)
    found = dict(locals())
    for name in ("snapshot", "newest_results", "metrics", "plan", "sources", "env", "database", "logs", "exits"):
        del found[name]
    return SimpleNamespace(**found)
