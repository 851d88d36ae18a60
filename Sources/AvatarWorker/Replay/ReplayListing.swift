import Foundation

/// The text the replay command prints. Jobs are shown by job id, error code, class,
/// attempts, replay count and first failure time: never user ids, keys or image bytes.
public enum ReplayListing {
    /// `--dry-run`: counts by error code, then one line per selected job.
    public static func dryRun(_ plan: ReplayPlan, dlqTopic: String) -> [String] {
        var lines = [overview(plan, dlqTopic: dlqTopic)]
        if plan.selected.isEmpty {
            lines.append("Nothing to replay.")
            lines += hints(plan)
            return lines
        }
        lines.append("By error code:")
        let width = max(20, plan.countsByErrorCode.map(\.code.count).max() ?? 0) + 2
        for entry in plan.countsByErrorCode {
            lines.append("  " + pad(entry.code, width) + "\(entry.count)")
        }
        lines.append("Jobs:")
        lines.append("  " + row(["job", "error_code", "class", "attempts", "replays", "first_failure", "action"]))
        let refusals = Dictionary(plan.refused.map { ($0.record.location, $0.reason) }, uniquingKeysWith: { a, _ in a })
        for record in plan.selected {
            let action = refusals[record.location].map { "refuse: \($0)" } ?? "replay"
            lines.append("  " + row(columns(record) + [action]))
        }
        lines.append("Would replay \(plan.toReplay.count)" + refusedSummary(plan.refusedByReason, verb: "would refuse"))
        lines += hints(plan)
        return lines
    }

    /// A real run: what was replayed, refused and could not be sent.
    public static func summary(_ outcome: DLQReplayer.Outcome, plan: ReplayPlan, dlqTopic: String) -> [String] {
        var lines = [overview(plan, dlqTopic: dlqTopic)]
        for refused in outcome.refused {
            lines.append("  refused \(refused.record.jobID ?? refused.record.location): \(refused.reason)")
        }
        for failed in outcome.failed {
            lines.append("  not sent \(failed.record.jobID ?? failed.record.location): \(failed.reason)")
        }
        var refusedCounts: [ReplayPlan.Refusal: Int] = [:]
        for refused in outcome.refused { refusedCounts[refused.reason, default: 0] += 1 }
        let byReason = refusedCounts.sorted { $0.key.description < $1.key.description }
            .map { (reason: $0.key, count: $0.value) }
        var summary = "Replayed \(outcome.replayed.count)" + refusedSummary(byReason, verb: "refused")
        if !outcome.failed.isEmpty { summary += "; \(outcome.failed.count) could not be sent" }
        lines.append(summary)
        lines += hints(plan)
        return lines
    }

    static func overview(_ plan: ReplayPlan, dlqTopic: String) -> String {
        var text =
            "DLQ \(dlqTopic): \(plan.scanned) record\(plan.scanned == 1 ? "" : "s") read, "
            + "\(plan.selected.count) job\(plan.selected.count == 1 ? "" : "s") selected"
        if plan.olderDuplicates > 0 {
            text +=
                " (\(plan.olderDuplicates) older record\(plan.olderDuplicates == 1 ? "" : "s") of jobs that "
                + "failed again left out)"
        }
        return text
    }

    static func refusedSummary(_ byReason: [(reason: ReplayPlan.Refusal, count: Int)], verb: String) -> String {
        let total = byReason.reduce(0) { $0 + $1.count }
        guard total > 0 else { return "; \(verb) 0" }
        return "; \(verb) \(total) (" + byReason.map { "\($0.reason): \($0.count)" }.joined(separator: ", ") + ")"
    }

    static func hints(_ plan: ReplayPlan) -> [String] {
        guard plan.excludedByClassOnly > 0 else { return [] }
        let count = plan.excludedByClassOnly
        return [
            "Not selected: \(count) other job\(count == 1 ? " matches" : "s match") all filters but the error "
                + "class (permanent failures are replayed only with --error-class permanent)"
        ]
    }

    static func columns(_ record: DLQRecord) -> [String] {
        [
            record.jobID ?? "(unreadable request) \(record.location)", record.errorCode ?? "-",
            record.errorClass?.rawValue ?? "-", record.attempts.map(String.init) ?? "-", "\(record.replayCount)",
            record.failedAt.map(ReplayTime.format) ?? "-",
        ]
    }

    private static let widths = [38, 22, 11, 10, 9, 22, 0]

    static func row(_ columns: [String]) -> String {
        zip(columns, widths).map { column, width in width == 0 ? column : pad(column, width) }.joined()
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.padding(toLength: max(width, text.count + 1), withPad: " ", startingAt: 0)
    }
}
