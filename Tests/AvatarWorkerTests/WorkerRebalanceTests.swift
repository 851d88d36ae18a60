import CropProtocol
import Foundation
import TestEnvironment
import Testing

@testable import AvatarWorker

/// Scaling the fleet on the real broker: what a joining worker costs the ones already running.
@Suite("Worker rebalancing (integration)", .requires(.database, .kafka))
struct WorkerRebalanceTests {
    /// Polls `condition` until it holds; fails after `limit` (a hang guard, not a performance bound).
    static func waitUntil(_ what: String, limit: Duration = .seconds(90), _ condition: () -> Bool) async throws {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while !condition() {
            guard clock.now < end else {
                Issue.record("gave up waiting for: \(what)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test(
        "a worker joining a six-partition group takes three partitions and revokes nothing else from the first",
        arguments: [nil, "range"])
    func joiningWorker(strategy: String?) async throws {
        try await withHarness(partitions: 6) { harness in
            // The default is cooperative-sticky; `range` (eager) is the control that shows the test can fail.
            let overrides = strategy.map { ["kafka.property.partition.assignment.strategy=\($0)"] } ?? []
            let first = try harness.startWorker(overrides)
            try await Self.waitUntil("the first worker owns all six partitions") {
                first.service.partitionsAssigned == 6
            }
            let second = try harness.startWorker(overrides)
            try await Self.waitUntil("the partitions are split between the two") {
                let (a, b) = (first.service.partitionsAssigned, second.service.partitionsAssigned)
                return a > 0 && b > 0 && a + b == 6
            }
            #expect(first.service.partitionsAssigned == 3 && second.service.partitionsAssigned == 3)
            if strategy == nil {
                #expect(
                    first.service.partitionsRevokedTotal == second.service.partitionsAssigned,
                    "cooperative: the first worker gives up only the partitions that move")
            } else {
                #expect(first.service.partitionsRevokedTotal == 6, "eager: every partition is revoked and drained")
            }

            // Both keep working: a job on each partition ends in a result.
            var jobs: [String] = []
            for partition in Int32(0)..<6 {
                let request = WorkerHarness.request(source: try harness.upload("orientation/Landscape_1.jpg"))
                try await harness.send(
                    try CropCodec.encode(request.message, format: .protobuf),
                    key: request.userID.uuidString.lowercased(), partition: partition)
                jobs.append(request.jobID)
            }
            let results = try await harness.events.results(harness.topics.results, jobs: jobs)
            #expect(results.count == 6)
        }
    }
}
