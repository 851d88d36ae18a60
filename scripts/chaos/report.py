"""The run's figures (printed, and written as JSON for the record) and its verdict: exit status 0 only when every
check holds."""
import json
import sys

from .stack import log


def report(found, jobs, prunes, replays, events, finished, path):
    """Prints the figures of `found` (checks.check), writes them to `path` when given, logs each failed check and
    exits: 0 when every check holds, else 1."""
    f = found
    figures = {
        "jobs_produced": len(f.expected), "messages_produced": len(jobs) + 1,
        "duplicates_sent": sum(1 for j in jobs if j[5] == "duplicate"),
        "malformed_sent": sum(1 for k in f.expected.values() if k == "malformed"),
        "jobs_with_result": len(f.latest), "lost": len(f.lost), "unresolved_transient": len(f.unresolved),
        "double_version_bumps": int(f.double_bumps), "stale_overwrites": int(f.stale),
        "versions_named_by_no_result": f.unattributed, "forgets_sent": len(f.forgets), "forget_wrong_outcome": len(f.forget_wrong),
        "cli_forgets": len(f.cli_forgotten), "cli_forget_attempts": sum(f.cli_forgotten.values()),
        "forgotten_users": len(f.forgotten_users), "tombstones_kept": f.tombstones,
        "forgotten_users_with_data_left": len(f.left_behind),
        "forgotten_users_with_a_result_kept": len(f.results_kept), "prune_runs": prunes["runs"],
        "ledger_rows_pruned": prunes["rows"], "prune_runs_failed": prunes["failed"],
        "published_avatars_checked": len(f.current), "bytes_not_matching_version": len(f.mismatched),
        "published_objects_checked": f.objects_checked, "published_objects_wrong": len(f.format_problems),
        "stuck_partitions": len(f.stuck), "hostile_wrong_outcome": len(f.hostile_wrong),
        "malformed_wrong_outcome": len(f.malformed_wrong), "helper_attacks": len(f.contained),
        "helper_attacks_wrong_outcome": len(f.contained_wrong),
        "mutated_uploads": len(f.mutations), "mutated_outcomes": dict(sorted(f.mutated_outcomes.items())),
        "worker_exits_not_by_kill": len(f.crashes), "worker_deaths_by_signal": len(f.killed_by_upload),
        "metrics_records": f.metrics_records, "metrics_stages_past_total": len(f.stages_past),
        "replay_rounds": replays,
        "outcomes": dict(sorted(f.by_outcome.items())), "faults": events,
        "seconds_to_finish": round(finished, 1),
    }
    print(json.dumps(figures, indent=2))
    if path:
        json.dump(figures, open(path, "w"), indent=2)
    failures = []
    for name, items in (("lost", f.lost), ("unresolved transient", f.unresolved), ("bytes != version", f.mismatched),
                        ("stuck partitions", f.stuck), ("hostile files with a wrong outcome", f.hostile_wrong),
                        ("malformed messages with a wrong outcome", f.malformed_wrong),
                        ("render helper attacks with a wrong outcome", f.contained_wrong),
                        ("workers killed by an upload", f.killed_by_upload),
                        ("forgets with a wrong outcome", f.forget_wrong),
                        ("forgotten users with data left", f.left_behind),
                        ("forgotten users whose newest results record is not the forget's null", f.results_kept),
                        ("metrics records whose stages add up past total_ms", f.stages_past),
                        ("published objects of a wrong format, size, version or with metadata", f.format_problems)):
        if items:
            failures.append(f"{name}: {len(items)} (e.g. {items[:5]})")
    if int(f.double_bumps):
        failures.append(f"double version bumps: {f.double_bumps}")
    if int(f.stale):
        failures.append(f"stale overwrites: {f.stale}")
    for failure in failures:
        log("FAIL " + failure)
    log("PASS: every promise held" if not failures else f"{len(failures)} check(s) failed")
    sys.exit(1 if failures else 0)
