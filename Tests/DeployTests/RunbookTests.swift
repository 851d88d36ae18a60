import AvatarWorker
import Foundation
import Testing

/// The alert rules, their promtool tests, the runbook and the metric table agree with each other.
@Suite("Alerts, runbook and metric table")
struct RunbookTests {
    static let rulesPath = "dashboards/alerts.rules.yml"

    /// Every alerting rule of the rules file, by name.
    static func alerts() throws -> [String: [String: Any]] {
        var alerts: [String: [String: Any]] = [:]
        for group in try YAMLFile.mapping(rulesPath).list("groups") ?? [] {
            for case let rule as [String: Any] in (group as? [String: Any])?.list("rules") ?? [] {
                if let name = rule.string("alert") { alerts[name] = rule }
            }
        }
        return alerts
    }

    /// The runbook's sections: `## Name` headings and the text up to the next one.
    static func runbookSections() throws -> [String: String] {
        var sections: [String: String] = [:]
        var current: String?
        for line in try Repo.text("docs/RUNBOOK.md").split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                current = String(line.dropFirst(3))
                sections[current!] = ""
            } else if let name = current {
                sections[name, default: ""] += line + "\n"
            }
        }
        return sections
    }

    @Test("every alert has a for, a runbook_url into docs/RUNBOOK.md and a runbook section that says what to do")
    func everyAlertHasARunbook() throws {
        let alerts = try Self.alerts()
        #expect(alerts.count >= 14, "the rules file's alerts were not found")
        let sections = try Self.runbookSections()
        for (name, rule) in alerts.sorted(by: { $0.key < $1.key }) {
            #expect(rule.string("for") != nil, "\(name) has no for:")
            let url = rule.map("annotations")?.string("runbook_url")
            // GitHub's anchor of the heading `## AvatarName` is `#avatarname`.
            #expect(url == "docs/RUNBOOK.md#" + name.lowercased(), "\(name)'s runbook_url: \(url ?? "none")")
            let section = try #require(sections[name], "docs/RUNBOOK.md has no section `## \(name)`")
            for part in ["**Means**", "**Confirm**", "**Do**"] {
                #expect(section.contains(part), "the runbook of \(name) lacks \(part)")
            }
        }
        let stray = Set(sections.keys).subtracting(alerts.keys).filter { $0.hasPrefix("Avatar") }
        #expect(stray.isEmpty, "runbook sections without an alert: \(stray)")
    }

    @Test("promtool's tests make every alert fire at least once")
    func everyAlertIsTested() throws {
        var fired: Set<String> = []
        for test in try YAMLFile.mapping("dashboards/alerts.test.yml").list("tests") ?? [] {
            for case let check as [String: Any] in (test as? [String: Any])?.list("alert_rule_test") ?? [] {
                if let name = check.string("alertname"), !(check.list("exp_alerts") ?? []).isEmpty {
                    fired.insert(name)
                }
            }
        }
        let untested = Set(try Self.alerts().keys).subtracting(fired)
        #expect(untested.isEmpty, "alerts no promtool test expects to fire: \(untested.sorted())")
    }

    @Test("dashboards/README.md's metric table names every exported metric")
    func metricTableComplete() throws {
        let readme = try Repo.text("dashboards/README.md")
        for name in MetricName.all {
            #expect(readme.contains("| `\(name)` |"), "\(name) is missing from the metric table")
        }
    }
}
