import Dispatch
import Foundation
import TestEnvironment
import Testing

@testable import Imaging

/// Tests/Fixtures/hostile (SOURCES.md there says how each was made).
enum Hostile {
    static let directory = TestFiles.fixtures.appendingPathComponent("hostile", isDirectory: true)

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { !$0.hasPrefix(".") && $0 != "SOURCES.md" }
            .sorted()
    }
}

/// Runs `body` on its own thread and waits at most `seconds`: a liveness guard far above the
/// milliseconds an answer takes, not a timing assertion. On a hang it records an issue and
/// returns nil (the stuck thread is abandoned; the suite still finishes).
func withHangGuard<T: Sendable>(
    seconds: Int = 10, _ what: String, _ body: @escaping @Sendable () -> T
) -> T? {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Thread {
        box.value = body()
        done.signal()
    }.start()
    guard done.wait(timeout: .now() + .seconds(seconds)) == .success else {
        Issue.record("\(what) did not answer within \(seconds) s: a hang")
        return nil
    }
    return box.value
}

private final class ResultBox<T>: @unchecked Sendable {
    // Written once by the worker thread before it signals; read after the wait.
    var value: T?
}
