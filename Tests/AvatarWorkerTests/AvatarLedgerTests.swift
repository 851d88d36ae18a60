import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AvatarWorker

/// The ledger on real Postgres: the exactly-once effect does not depend on the scheduler.
@Suite("Avatar ledger (integration)", .enabled(if: TestServices.workerServices))
struct AvatarLedgerTests {
    @Test("two workers applying the same job at once bump the version once")
    func concurrentDuplicate() async throws {
        try await withHarness { harness in
            let ledger = AvatarLedger(client: harness.database)
            for _ in 0..<10 {
                let user = UUID()
                let job = UUID().uuidString
                let requestedAt = Date()  // a redelivered job carries the same request
                let outcomes = Mutex<[AvatarLedger.Applied]>([])
                let errors = Mutex<[String]>([])
                DispatchQueue.concurrentPerform(iterations: 2) { _ in
                    do {
                        let outcome = try ledger.apply(
                            jobID: job, userID: user, requestedAt: requestedAt, path: "users/x/avatar_512.png",
                            blurHash: nil, attempts: 1)
                        outcomes.withLock { $0.append(outcome) }
                    } catch {
                        errors.withLock { $0.append("\(error)") }
                    }
                }
                let all = outcomes.withLock { $0 }
                #expect(errors.withLock { $0 }.isEmpty)
                #expect(all.contains(.published(version: 1)))
                #expect(all.contains(.alreadySucceeded(version: 1, path: "users/x/avatar_512.png")))
                let version = try harness.profile(user)?.version
                #expect(version == 1)
            }
        }
    }

    @Test("an older request never overwrites a newer one, and a new profile row is created")
    func ordering() async throws {
        try await withHarness { harness in
            let ledger = AvatarLedger(client: harness.database)
            let user = UUID()
            let now = Date()
            let newer = try ledger.apply(
                jobID: "new", userID: user, requestedAt: now, path: "p2", blurHash: "LKO2", attempts: 1)
            #expect(newer == .published(version: 1))
            let older = try ledger.apply(
                jobID: "old", userID: user, requestedAt: now.addingTimeInterval(-5), path: "p1", blurHash: nil,
                attempts: 1)
            #expect(older == .superseded)
            let prechecks = try [
                ledger.precheck(jobID: "old", userID: user, requestedAt: now.addingTimeInterval(-5)),
                ledger.precheck(jobID: "new", userID: user, requestedAt: now),
                ledger.precheck(jobID: "next", userID: user, requestedAt: now),
            ]
            #expect(prechecks == [.superseded, .alreadySucceeded(version: 1, path: "p2"), .proceed])
            let path = try harness.profile(user)?.path
            #expect(path == "p2")
            let superseded = try harness.ledgerCount(status: "superseded")
            #expect(superseded == 1)
        }
    }
}
